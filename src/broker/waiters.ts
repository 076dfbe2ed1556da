import type { ClaimResult } from '../claims/claim-desktop.js';
import { isVdiError, type VdiErrorCode } from '../errors.js';
import type { Vdi } from '../vdi.js';
import type { WaitPosition } from '../waitlist/claim-or-wait.js';
import type { ClaimedDesktopBody, WaiterBody } from './schemas.js';

/** One identity's wait on one pool, as the broker names it. */
export interface WaiterTarget {
  kind: 'vm' | 'ct';
  namespace: string;
  pool: string;
  identity: string;
  /** The caller's groups and whether it is an admin, for the pool's entitlement. */
  groups: string[];
  asAdmin: boolean;
  /** The broker's limit of desktops per user; `undefined` for none. */
  maxDesktopsPerUser: number | undefined;
  /** The last part of the waiter ID: the hash the waiter Lease carries. */
  key: string;
}

/** How a claim the broker started came out first: claimed at once, or queued. */
export type WaitStart = { kind: 'claimed'; claimed: ClaimResult } | { kind: 'waiting'; waiter: WaiterBody };

/**
 * The waiting claims of one broker process, by waiter ID. The queue itself is in the cluster; this keeps what
 * the broker tells a polling caller (position, the desktop once claimed, the error) and the wait's abort. The
 * newest `limit` finished waits stay readable, so what it holds is bounded.
 */
export interface WaiterRegistry {
  /**
   * Claims with `wait` for `target.identity`; resolves as soon as the claim holds a desktop or is queued. While a
   * wait of the same ID runs, answers that one.
   *
   * @throws {@link VdiError} what the claim throws before it is queued.
   */
  start(target: WaiterTarget, waitTimeoutMs: number): Promise<WaitStart>;
  /** The waiter, or `undefined` when this process has none of that ID. */
  get(id: string): (WaiterBody & { identity: string }) | undefined;
  /** Cancels a running wait; resolves once it ended. */
  cancel(id: string): Promise<WaiterBody | undefined>;
  /** Cancels every running wait (a stopping broker leaves no loop behind). */
  cancelAll(): Promise<void>;
}

interface Entry {
  body: WaiterBody;
  identity: string;
  abort: AbortController;
  done: Promise<void>;
}

/** The waiter ID of a target: `<kind>/<namespace>/<pool>/<key>`. */
export function waiterIdOf(target: Pick<WaiterTarget, 'kind' | 'namespace' | 'pool' | 'key'>): string {
  return `${target.kind}/${target.namespace}/${target.pool}/${target.key}`;
}

const statusOf = (code: VdiErrorCode): WaiterBody['status'] =>
  code === 'WAIT_TIMED_OUT' ? 'timed-out' : code === 'CANCELLED' ? 'cancelled' : 'failed';

/** Builds a {@link WaiterRegistry} on `vdi`; `describe` turns a claim into the API's desktop. */
export function createWaiterRegistry(
  vdi: Vdi,
  describe: (claimed: ClaimResult) => ClaimedDesktopBody,
  log: (message: string) => void,
  limit = 1000,
): WaiterRegistry {
  const entries = new Map<string, Entry>();
  const forget = () => {
    // Map keeps insertion order, so the first finished entries are the oldest
    for (const [id, entry] of entries) {
      if (entries.size <= limit) return;
      if (entry.body.status !== 'waiting') entries.delete(id);
    }
  };

  return {
    async start(target, waitTimeoutMs) {
      const id = waiterIdOf(target);
      const running = entries.get(id);
      if (running?.body.status === 'waiting') return { kind: 'waiting', waiter: running.body };
      const abort = new AbortController();
      const body: WaiterBody = {
        id,
        poolId: `${target.kind}/${target.namespace}/${target.pool}`,
        status: 'waiting',
        position: null,
        waiters: null,
        enqueuedAt: null,
        desktop: null,
        error: null,
      };
      let settle: (start: WaitStart | { kind: 'failed'; error: unknown }) => void = () => {};
      const first = new Promise<WaitStart | { kind: 'failed'; error: unknown }>((resolve) => {
        settle = resolve;
      });
      const onPosition = (at: WaitPosition) => {
        Object.assign(body, { position: at.position, waiters: at.waiters, enqueuedAt: at.enqueuedAt });
        // a finished wait of the same ID gives way to this one, now the newest
        if (entries.get(id) !== entry) {
          entries.delete(id);
          entries.set(id, entry);
        }
        settle({ kind: 'waiting', waiter: body });
      };
      const claim = vdi.claim({
        pool: target.pool,
        identity: target.identity,
        groups: target.groups,
        asAdmin: target.asAdmin,
        ...(target.maxDesktopsPerUser === undefined ? {} : { maxDesktopsPerUser: target.maxDesktopsPerUser }),
        namespace: target.namespace,
        kind: target.kind,
        wait: true,
        waitTimeoutMs,
        signal: abort.signal,
        onPosition,
      });
      const entry: Entry = {
        body,
        identity: target.identity,
        abort,
        done: claim.then(
          (claimed) => {
            Object.assign(body, { status: 'claimed', position: null, desktop: describe(claimed) });
            settle({ kind: 'claimed', claimed });
          },
          (error: unknown) => {
            const known = isVdiError(error);
            if (!known) log(`broker: the wait ${id} failed unexpectedly: ${String(error)}`);
            Object.assign(body, {
              status: known ? statusOf(error.code) : 'failed',
              position: null,
              error: known
                ? { code: error.code, message: error.message }
                : { code: 'INTERNAL', message: 'The wait failed unexpectedly; see the broker log.' },
            });
            settle({ kind: 'failed', error });
          },
        ),
      };
      const started = await first;
      forget();
      if (started.kind === 'failed') throw started.error;
      return started;
    },
    get(id) {
      const entry = entries.get(id);
      return entry && { ...entry.body, identity: entry.identity };
    },
    async cancel(id) {
      const entry = entries.get(id);
      if (!entry) return undefined;
      entry.abort.abort();
      await entry.done;
      return entry.body;
    },
    async cancelAll() {
      for (const entry of entries.values()) entry.abort.abort();
      await Promise.all([...entries.values()].map((entry) => entry.done));
    },
  };
}
