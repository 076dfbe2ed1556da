import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type ClaimMarks, classifyMemberClaim } from '../claims/claim-liveness.js';
import { isReleasing } from '../claims/releasing-mark.js';
import { backendFor, type VdiContext } from '../context.js';
import type { DesktopBackend, DesktopKind, MemberRef, ResetHow } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatDesktopId } from '../ids.js';
import { leaseKindLabel, releaseCauseAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  validateNamespace,
} from '../validate.js';
import { claimKeyOf, isSameClaim } from './claim-key.js';
import { type ConsoleState, withConsoleMarks } from './console-marks.js';
import { planConsoleOpen } from './plan-console-open.js';
import type { ReclaimReason } from './plan-reclaim.js';
import { updateClaimLease } from './update-claim-lease.js';

/** The console transports whose sessions count. @category sessions */
export type ConsoleKind = 'vnc' | 'serial' | 'terminal' | 'rdp';

/**
 * Why the session engine ended a console: its desktop was `released`, or `reclaimed` by the policy, with a
 * message for the person at the console.
 *
 * @category sessions
 */
export type ConsoleEnd =
  | { cause: 'released'; message: string }
  | { cause: 'reclaimed'; reason: ReclaimReason; message: string };

const reclaimReasons: readonly ReclaimReason[] = ['disconnect-grace', 'max-duration', 'idle', 'not-entitled'];

/**
 * How the consoles of a desktop end once its release is done: a holder's or an administrator's release, or the
 * policy's reclaim for `reason`, with the message the person at the console reads.
 *
 * @category sessions
 */
export function consoleEndFor(reason?: ReclaimReason): ConsoleEnd {
  if (reason === undefined) {
    return { cause: 'released', message: 'The desktop was released; claim a desktop to go on.' };
  }
  return {
    cause: 'reclaimed',
    reason,
    message: `The desktop was reclaimed (${reason}); claim a desktop again to go on.`,
  };
}

/** What a release marks on the Lease (`corral.dev/vdi-release-cause`) for consoles to end with `end`. */
export function releaseCauseOf(end: ConsoleEnd): string {
  return end.cause === 'released' ? 'released' : `reclaimed ${end.reason}`;
}

/** The console end a Lease marked releasing names, if it names one. */
export function consoleEndOfLease(lease: LeaseObject | undefined): ConsoleEnd | undefined {
  if (!isReleasing(lease)) return undefined;
  const cause = lease?.metadata.annotations?.[releaseCauseAnnotation] ?? '';
  if (cause === 'released') return consoleEndFor();
  const reason = reclaimReasons.find((known) => cause === `reclaimed ${known}`);
  return reason === undefined ? undefined : consoleEndFor(reason);
}

/** Options of {@link SessionEngine.openConsole}. @category sessions */
export interface OpenConsoleOptions {
  /** The member VM's name. */
  member: string;
  /** Defaults to the SDK's namespace; it must be one the engine serves. */
  namespace?: string;
  /** Who opens the console: the holder or an administrator. */
  identity: string;
  /** The console's protocol. */
  kind: ConsoleKind;
}

/** One open console. Close it when its connection ends; a second close resolves with the first. @category sessions */
export interface ConsoleHandle {
  /** `vm/<namespace>/<member>`. */
  readonly desktopId: string;
  /** Who opened it. */
  readonly identity: string;
  /** The console's protocol. */
  readonly kind: ConsoleKind;
  /** When it opened, by the engine's clock. */
  readonly openedAt: Date;
  /**
   * Aborted, with a {@link ConsoleEnd} as its `reason`, when the engine ends the console because its desktop is
   * released or reclaimed: close the connection then. The handle is closed already.
   */
  readonly ended: AbortSignal;
  /**
   * How the console ends once its desktop is down, when a release or reclaim of the desktop succeeded while it was
   * open: its member's stop was accepted, and the console goes when the guest does. `undefined` otherwise.
   */
  ending(): ConsoleEnd | undefined;
  /** Ends the console. The last one to close starts the desktop's disconnect grace. Never throws. */
  close(): Promise<void>;
}

/** The consoles of one claimed desktop in this process, and the marks they imply. */
export interface TrackedConsoles extends ConsoleState {
  /** Mark writes of one desktop run one after another, so an older state never overwrites a newer one. */
  writing: Promise<unknown>;
  /** The Lease as this process last wrote it: a heartbeat starts from it and reads again only on a conflict. */
  lease: LeaseObject | undefined;
}

/** The open consoles of one process and the entries and session marks they put on the claims' Leases. */
export interface ConsoleTracker {
  /** The replica ID this process's console entries are recorded under. */
  readonly replicaId: string;
  openConsole(options: OpenConsoleOptions): Promise<ConsoleHandle>;
  /** The console state of the claim `lease` records, if this process tracks one for it. */
  trackedFor(namespace: string, member: string, lease: LeaseObject): TrackedConsoles | undefined;
  /** The console state of every member of `namespace` this process tracks, by member. */
  trackedIn(namespace: string): Map<string, TrackedConsoles>;
  /** Records that the Lease carries the marks up to `version`; a closed, fully written entry is then dropped. */
  noteWritten(namespace: string, member: string, entry: TrackedConsoles, version: number): void;
  /** Drops the entry, when it is still the member's. */
  forget(namespace: string, member: string, entry: TrackedConsoles): void;
  /** Ends every open console of a member in this process, counted or not, and closes their handles. */
  endConsoles(namespace: string, member: string, end: ConsoleEnd): Promise<number>;
  /**
   * Ends the consoles of a member open in this process now once the member is down, after a release or reclaim
   * reset it: at once for a `recreated` member (its old object is gone), else once its instance is gone. Meanwhile
   * each console's `ending()` tells `end`, so one whose stream closes as the guest goes says why. Resolves with how
   * many ended.
   */
  endConsolesWhenDown(target: DownTarget, end: ConsoleEnd): Promise<number>;
  /**
   * Says, while a release or reclaim of the member runs in this process, how its consoles end: one whose stream closes
   * meanwhile (the guest stopping) tells `end`. Call the returned function once the release is over.
   */
  expectEnd(namespace: string, member: string, end: ConsoleEnd): () => void;
  /**
   * The Lease with this replica's entry (of `entry`'s state, or as it stands; refreshed when `refresh`) and the
   * marks brought up to date, or `undefined` when it carries them.
   */
  mark(lease: LeaseObject, entry: TrackedConsoles | undefined, refresh: boolean): LeaseObject | undefined;
  /** Refreshes this replica's entries of desktops with consoles open, and writes any a failed write missed. */
  heartbeat(): Promise<void>;
}

/** A member a release or reclaim reset, and how. */
export interface DownTarget {
  kind: DesktopKind;
  namespace: string;
  member: string;
  reset: ResetHow;
}

const downPollMs = 250;
// a guest that has not gone after this long loses its consoles all the same: its claim ended
const downPolls = (2 * 60_000) / downPollMs;

/** Reads the member until it is gone or stopped with no instance left, for at most two minutes. */
async function waitUntilStopped(backend: DesktopBackend, ref: MemberRef): Promise<void> {
  for (let poll = 1; poll <= downPolls; poll += 1) {
    const facts = await backend.readMember(ref).catch(() => null);
    if (facts === undefined) return;
    if (
      facts !== null &&
      !facts.previousInstance &&
      facts.power !== 'running' &&
      facts.power !== 'starting'
    ) {
      return;
    }
    await sleep(downPollMs);
  }
}

/** What a {@link ConsoleTracker} records its consoles as. */
export interface ConsoleTrackerOptions {
  namespaces: readonly string[];
  replicaId: string;
  /** How often the entries of open consoles are refreshed; an entry counts for three times this. */
  heartbeatMs: number;
  processStartedAt: Date;
}

const consoleSchema = z.object({
  member: memberNameSchema,
  namespace: namespaceSchema.optional(),
  identity: identitySchema,
  kind: z.enum(['vnc', 'serial', 'terminal', 'rdp']),
});

/** The marks of a member whose object is gone: nothing on it says it is claimed or stopped. */
function goneMember(member: string): ClaimMarks {
  return {
    member,
    pool: '',
    deleting: false,
    power: 'unknown',
    presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
  };
}

const heartbeatConcurrency = 16;

/**
 * Tracks the consoles of `namespaces` in this process and records them on the Leases: this replica's entry in
 * `corral.dev/vdi-consoles`, refreshed every `heartbeatMs` while consoles are open, and the connected periods.
 */
export function createConsoleTracker(ctx: VdiContext, options: ConsoleTrackerOptions): ConsoleTracker {
  const { namespaces, replicaId, heartbeatMs, processStartedAt } = options;
  const expiryMs = 3 * heartbeatMs;
  const tracked = new Map<string, TrackedConsoles>();
  let timer: ReturnType<typeof setInterval> | undefined;
  // every open handle, counted or not, so a release can end them all
  type LiveConsole = { handle: ConsoleHandle; controller: AbortController; ending?: ConsoleEnd };
  const live = new Map<string, Set<LiveConsole>>();
  // the ends of the releases this process runs, by member: the guest may go before the release answers
  const expected = new Map<string, Set<{ end: ConsoleEnd }>>();
  const keyOf = (namespace: string, member: string) => `${namespace}/${member}`;
  // a namespace never holds a slash
  const splitKey = (key: string) => [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];

  function endMarkedOn(key: string): ConsoleEnd | undefined {
    const [namespace = '', member = ''] = splitKey(key);
    return consoleEndOfLease(ctx.cluster.cachesOf(namespace)?.leases.get(leaseNameFor(member)));
  }

  // Each namespace's Lease cache, once it runs, tells this process of releases any replica finished: the Lease of a
  // claim marked releasing goes once its member was stopped or deleted, and its consoles here end as there.
  const following = new Set<string>();
  function followReleases(namespace: string): void {
    const leases = ctx.cluster.cachesOf(namespace)?.leases;
    if (leases === undefined || following.has(namespace)) return;
    following.add(namespace);
    leases.onChange(({ type, object }) => {
      const end = type === 'deleted' ? consoleEndOfLease(object) : undefined;
      if (end === undefined) return;
      const member = [...live.keys()]
        .map(splitKey)
        .find(
          ([liveIn = '', name = '']) => liveIn === namespace && leaseNameFor(name) === object.metadata.name,
        )?.[1];
      if (member === undefined) return;
      // a container is always made again; a VM member made again is stopped, so the wait ends as for a stop
      const kind = object.metadata.labels?.[leaseKindLabel] === 'ct' ? 'ct' : 'vm';
      const reset = kind === 'ct' ? 'recreated' : 'stopped';
      void endConsolesWhenDown({ kind, namespace, member, reset }, end).catch(() => undefined);
    });
  }

  function keepLive(
    key: string,
    handle: Omit<ConsoleHandle, 'ending'>,
    controller: AbortController,
  ): ConsoleHandle {
    const set = live.get(key) ?? new Set();
    live.set(key, set);
    const kept: ConsoleHandle = {
      ...handle,
      // a release run by another replica says so on the Lease, which this process's cache holds
      ending: () => entry.ending ?? [...(expected.get(key) ?? [])][0]?.end ?? endMarkedOn(key),
      async close() {
        set.delete(entry);
        if (set.size === 0 && live.get(key) === set) live.delete(key);
        await handle.close();
      },
    };
    const entry: LiveConsole = { handle: kept, controller };
    set.add(entry);
    return kept;
  }

  function trackedFor(namespace: string, member: string, lease: LeaseObject): TrackedConsoles | undefined {
    const entry = tracked.get(keyOf(namespace, member));
    return entry && isSameClaim(entry.claim, claimKeyOf(lease)) ? entry : undefined;
  }

  function forget(namespace: string, member: string, entry: TrackedConsoles): void {
    if (tracked.get(keyOf(namespace, member)) === entry) tracked.delete(keyOf(namespace, member));
  }

  function noteWritten(namespace: string, member: string, entry: TrackedConsoles, version: number): void {
    entry.written = Math.max(entry.written, version);
    if (entry.open === 0 && entry.written === entry.version) forget(namespace, member, entry);
  }

  function mark(lease: LeaseObject, entry: TrackedConsoles | undefined, refresh: boolean) {
    const now = ctx.clock.now();
    return withConsoleMarks(lease, { replicaId, consoles: entry, now, expiryMs, processStartedAt, refresh });
  }

  // Writes the entry's current state, after any write already under way; resolves with whether the claim is still there.
  function syncMarks(
    namespace: string,
    member: string,
    entry: TrackedConsoles,
    { known, refresh = false }: { known?: LeaseObject; refresh?: boolean } = {},
  ): Promise<boolean> {
    const write = entry.writing.then(async () => {
      const version = entry.version;
      // an entry this process never wrote may be one an earlier process left under the same ID
      const rewrite = refresh || entry.lease === undefined;
      const outcome = await updateClaimLease(
        ctx,
        {
          namespace,
          name: leaseNameFor(member),
          claim: entry.claim,
          known: known ?? (refresh ? entry.lease : undefined),
        },
        // a release owns a releasing claim: a refresh would only race its delete
        (lease) => (refresh && isReleasing(lease) ? undefined : mark(lease, entry, rewrite)),
      );
      if (outcome.kind === 'gone') {
        forget(namespace, member, entry);
        return false;
      }
      if (outcome.kind === 'written') entry.lease = outcome.lease;
      noteWritten(namespace, member, entry, version);
      return true;
    });
    entry.writing = write.catch(() => undefined);
    return write;
  }

  async function heartbeat(): Promise<void> {
    const due = [...tracked].filter(([, entry]) => entry.open > 0 || entry.written < entry.version);
    // the timer runs only while this process has consoles to vouch for
    if (!due.some(([, entry]) => entry.open > 0) && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
    await forEachBounded(due, heartbeatConcurrency, async ([key, entry]) => {
      const [namespace = '', member = ''] = splitKey(key);
      // a failed write leaves the entry due; the next heartbeat or pass writes it
      await syncMarks(namespace, member, entry, { refresh: true }).catch(() => undefined);
    });
  }

  function keepBeating(): void {
    if (timer !== undefined) return;
    timer = setInterval(() => void heartbeat(), heartbeatMs);
    // consoles alone never keep a process alive
    timer.unref();
  }

  async function openConsole(openOptions: OpenConsoleOptions): Promise<ConsoleHandle> {
    const {
      member,
      namespace: asked,
      identity,
      kind,
    } = parseOptions(consoleSchema, openOptions, 'openConsole');
    const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
    if (!namespaces.includes(namespace)) {
      throw new VdiError(
        'INVALID_INPUT',
        `Namespace "${namespace}" is not served by this session engine; it serves ${namespaces.join(', ')}.`,
        { details: { namespace, namespaces } },
      );
    }
    followReleases(namespace);
    // a terminal is a container's only console, and a container has no other
    const desktopKind = kind === 'terminal' ? 'ct' : 'vm';
    const desktopId = formatDesktopId({ kind: desktopKind, namespace, member });
    const [facts, lease] = await Promise.all([
      backendFor(ctx, desktopKind).readMember({ namespace, member }),
      ctx.cluster.getLease(namespace, leaseNameFor(member)),
    ]);
    const now = ctx.clock.now();
    // with the member gone, the Lease alone says whether it is claimed
    const claim = classifyMemberClaim({ member: facts ?? goneMember(member), lease, now });
    const plan = planConsoleOpen(claim, desktopId);
    if (plan.kind === 'reject') throw new VdiError(plan.code, plan.message, { details: { desktopId } });
    const key = keyOf(namespace, member);
    const controller = new AbortController();
    // without a Lease to carry marks, no grace starts when the console closes
    if (plan.kind === 'uncounted' || lease === undefined) {
      const handle = { desktopId, identity, kind, openedAt: now, ended: controller.signal };
      return keepLive(key, { ...handle, close: async () => undefined }, controller);
    }
    let entry = trackedFor(namespace, member, lease);
    if (!entry) {
      entry = {
        claim: claimKeyOf(lease),
        open: 0,
        connectedAt: undefined,
        disconnectedAt: undefined,
        version: 0,
        written: 0,
        writing: Promise.resolve(),
        lease: undefined,
      };
      tracked.set(key, entry);
    }
    const before = { connectedAt: entry.connectedAt, version: entry.version };
    entry.open += 1;
    if (entry.open === 1) {
      entry.connectedAt = now;
      entry.version += 1;
    }
    const undo = (current: TrackedConsoles) => {
      current.open -= 1;
      // nothing recorded this connected period, so it did not happen
      if (current.open === 0 && current.version === before.version + 1) {
        current.connectedAt = before.connectedAt;
        current.version = before.version;
      }
    };
    let present: boolean;
    try {
      present = await syncMarks(namespace, member, entry, { known: lease });
    } catch (error) {
      undo(entry);
      throw error;
    }
    if (!present) {
      undo(entry);
      throw new VdiError(
        'CLAIM_ENDED',
        `The claim on ${desktopId} ended while the console opened; claim its pool again.`,
        { details: { desktopId } },
      );
    }
    keepBeating();
    const opened = entry;
    const closeOnce = async () => {
      // a console of a claim that ended, or that this engine already forgot, changes nothing
      if (tracked.get(key) !== opened) return;
      opened.open -= 1;
      if (opened.open > 0) return;
      opened.disconnectedAt = ctx.clock.now();
      opened.version += 1;
      // a failed write stays pending; the next pass writes it
      await syncMarks(namespace, member, opened).catch(() => undefined);
    };
    let closing: Promise<void> | undefined;
    return keepLive(
      key,
      {
        desktopId,
        identity,
        kind,
        openedAt: now,
        ended: controller.signal,
        // every call resolves when the one close is recorded, so a host closing on two socket events waits for it
        close: () => {
          closing ??= closeOnce();
          return closing;
        },
      },
      controller,
    );
  }

  async function endConsoles(namespace: string, member: string, end: ConsoleEnd): Promise<number> {
    const entries = [...(live.get(keyOf(namespace, member)) ?? [])];
    await Promise.all(
      entries.map(async ({ handle, controller }) => {
        controller.abort(end);
        await handle.close();
      }),
    );
    return entries.length;
  }

  async function endConsolesWhenDown(target: DownTarget, end: ConsoleEnd): Promise<number> {
    const { namespace, member } = target;
    for (const entry of live.get(keyOf(namespace, member)) ?? []) entry.ending = end;
    if (target.reset === 'stopped')
      await waitUntilStopped(backendFor(ctx, target.kind), { namespace, member });
    return await endConsoles(namespace, member, end);
  }

  function expectEnd(namespace: string, member: string, end: ConsoleEnd): () => void {
    const key = keyOf(namespace, member);
    const ends = expected.get(key) ?? new Set();
    expected.set(key, ends);
    const mine = { end };
    ends.add(mine);
    return () => {
      ends.delete(mine);
      if (ends.size === 0 && expected.get(key) === ends) expected.delete(key);
    };
  }

  return {
    replicaId,
    openConsole,
    endConsolesWhenDown,
    expectEnd,
    trackedFor,
    trackedIn(namespace) {
      const prefix = `${namespace}/`;
      return new Map(
        [...tracked.entries()]
          .filter(([key]) => key.startsWith(prefix))
          .map(([key, entry]) => [key.slice(prefix.length), entry]),
      );
    },
    noteWritten,
    forget,
    endConsoles,
    mark,
    heartbeat,
  };
}
