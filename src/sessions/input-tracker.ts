import type { VdiContext } from '../context.js';
import { inputAtAnnotation } from '../keys.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import { claimKeyOf } from './claim-key.js';
import { planRenewal } from './plan-renewal.js';
import { updateClaimLease } from './update-claim-lease.js';

/** The last input of one desktop in this process, and what of it the Lease carries. */
interface InputEntry {
  at: Date;
  /** When this process last wrote the mark, by the engine's clock. */
  writtenAt: Date | undefined;
  /** The input time the Lease carries from this process. */
  marked: Date | undefined;
  writing: boolean;
}

/**
 * The input the broker's consoles carried, per desktop, and its `corral.dev/vdi-input-at` mark on the claim's
 * Lease: written at once when the last write is `intervalMs` old, else by a later {@link InputTracker.flush}, so a
 * desktop's Lease takes at most one input write per interval whatever its user types.
 */
export interface InputTracker {
  /** Records input on a console of the member now; may start a mark write, never throws. */
  noteInput(namespace: string, member: string): void;
  /** The last input of each member of `namespace` in this process. */
  inputsIn(namespace: string): Map<string, Date>;
  /** Writes the marks of `namespace` whose interval has passed; resolves with the failures. */
  flush(namespace: string): Promise<unknown[]>;
}

/** Tracks console input in this process and writes it to the claims' Leases at most once per `intervalMs`. */
export function createInputTracker(ctx: VdiContext, intervalMs: number): InputTracker {
  const entries = new Map<string, InputEntry>();
  const keyOf = (namespace: string, member: string) => `${namespace}/${member}`;

  function isDue(entry: InputEntry): boolean {
    if (entry.writing || (entry.marked && entry.marked.getTime() >= entry.at.getTime())) return false;
    return (
      entry.writtenAt === undefined || ctx.clock.now().getTime() - entry.writtenAt.getTime() >= intervalMs
    );
  }

  async function write(namespace: string, member: string, entry: InputEntry): Promise<void> {
    entry.writing = true;
    const at = entry.at;
    entry.writtenAt = ctx.clock.now();
    try {
      const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
      // input on a desktop without a live claim marks nothing
      if (!lease || planRenewal(lease, ctx.clock.now()).kind === 'expired') {
        if (entries.get(keyOf(namespace, member)) === entry) entries.delete(keyOf(namespace, member));
        return;
      }
      await updateClaimLease(
        ctx,
        { namespace, name: leaseNameFor(member), claim: claimKeyOf(lease), known: lease },
        (current) => {
          const text = current.metadata.annotations?.[inputAtAnnotation];
          const marked = text === undefined ? undefined : parseRfc3339(text);
          // another replica may have marked later input
          if (marked && marked.getTime() >= at.getTime()) return undefined;
          const annotations = { ...current.metadata.annotations, [inputAtAnnotation]: at.toISOString() };
          return { ...current, metadata: { ...current.metadata, annotations } };
        },
      );
      entry.marked = at;
    } finally {
      entry.writing = false;
    }
  }

  return {
    noteInput(namespace, member) {
      const key = keyOf(namespace, member);
      const entry = entries.get(key) ?? {
        at: ctx.clock.now(),
        writtenAt: undefined,
        marked: undefined,
        writing: false,
      };
      entry.at = ctx.clock.now();
      entries.set(key, entry);
      // a failed write is left for the next flush
      if (isDue(entry)) void write(namespace, member, entry).catch(() => undefined);
    },
    inputsIn(namespace) {
      const prefix = `${namespace}/`;
      return new Map(
        [...entries.entries()]
          .filter(([key]) => key.startsWith(prefix))
          .map(([key, entry]) => [key.slice(prefix.length), entry.at]),
      );
    },
    async flush(namespace) {
      const prefix = `${namespace}/`;
      const due = [...entries.entries()].filter(([key, entry]) => key.startsWith(prefix) && isDue(entry));
      const failures: unknown[] = [];
      await Promise.all(
        due.map(([key, entry]) =>
          write(namespace, key.slice(prefix.length), entry).catch((error: unknown) => {
            failures.push(error);
          }),
        ),
      );
      return failures;
    },
  };
}
