import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import type { LeaseObject } from '../kube-objects.js';
import { namespaceSchema, parseOptions } from '../validate.js';
import {
  checkLeaderElectionTimings,
  defaultLeaderElectionTimings,
  isLeadershipHeld,
  type LeaderElectionTimings,
  type LeaderObservation,
  observeLeaderLease,
  planLeaderRelease,
  planLeaderStep,
} from './plan-leader-election.js';

/**
 * The leader Lease's default name. It lies outside the `corral-vdi-` names of claim Leases, so no member's claim
 * can ever take it.
 *
 * @category leader
 */
export const defaultLeaderLeaseName = 'corral-broker-leader';

/** Options of {@link createLeaderElector}. @category leader */
export interface LeaderElectorOptions extends Partial<LeaderElectionTimings> {
  /** Where the leader Lease lives. */
  namespace: string;
  /** @defaultValue {@link defaultLeaderLeaseName} */
  leaseName?: string;
  /**
   * This replica's name on the Lease; each replica needs its own.
   * @defaultValue the host name (a Pod's name) and a random suffix
   */
  identity?: string;
  /** Called when this replica becomes leader; `signal` aborts when it stops leading. */
  onStarted?: (signal: AbortSignal) => void | Promise<void>;
  /** Called when this replica stops leading (lost, lapsed or shut down); the Lease is released after it resolves. */
  onStopped?: () => void | Promise<void>;
  /** Where failed tries go, one line each. @defaultValue nowhere: the next try repeats them */
  log?: (message: string) => void;
}

/** One replica's part in electing a leader through a Lease. @category leader */
export interface LeaderElector {
  readonly identity: string;
  readonly namespace: string;
  readonly leaseName: string;
  readonly timings: Readonly<LeaderElectionTimings>;
  /** Whether this replica leads now: it last wrote the Lease as holder less than the renew deadline ago. No I/O. */
  isLeader(): boolean;
  /**
   * One try to acquire or renew the Lease, as the started loop makes every retry period; tries never overlap.
   * Resolves with {@link LeaderElector.isLeader} after it. A failure of the apiserver is not thrown: the replica
   * keeps leading until its renew deadline passes.
   */
  tryAcquireOrRenew(): Promise<boolean>;
  /** Tries every retry period (sooner when a follower's wait ends earlier) until {@link LeaderElector.stop}. */
  start(): void;
  /**
   * Stops trying. A leader stops leading (`onStopped` runs to its end) and then releases the Lease, clearing the
   * holder so that a follower takes over on its next try instead of after a lease duration.
   */
  stop(): Promise<void>;
  /**
   * The check before a leader's write: reads the Lease again and resolves only if it still names this replica
   * and was renewed less than the renew deadline ago by the clock.
   *
   * @throws {@link VdiError} `NOT_LEADER` otherwise; the apiserver's errors when the Lease cannot be read.
   */
  fence(): Promise<void>;
}

const positiveMs = z.number().int().positive().max(2_147_483_647);
const optionsSchema = z.object({
  namespace: namespaceSchema,
  leaseName: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'a DNS-1123 subdomain')
    .max(253)
    .optional(),
  identity: z.string().trim().min(1).optional(),
  leaseDurationMs: positiveMs.optional(),
  renewDeadlineMs: positiveMs.optional(),
  retryPeriodMs: positiveMs.optional(),
  onStarted: z.custom<LeaderElectorOptions['onStarted']>((value) => typeof value === 'function').optional(),
  onStopped: z.custom<LeaderElectorOptions['onStopped']>((value) => typeof value === 'function').optional(),
  log: z.custom<LeaderElectorOptions['log']>((value) => typeof value === 'function').optional(),
});

/** A replica name: the host name (in Kubernetes, the Pod's) and a random suffix, so a restarted Pod is new. */
function defaultLeaderIdentity(): string {
  return `${hostname()}-${randomBytes(4).toString('hex')}`;
}

/**
 * Creates one replica's leader elector on a Lease, with client-go `leaderelection` semantics: the first replica
 * to create the Lease leads and renews it every retry period; a follower takes it over once it has not changed
 * for a lease duration (by the follower's clock), or at once when it was released; every write is conditioned on
 * the resourceVersion read, so of two replicas racing, one gets a conflict and follows. A leader that cannot
 * renew for the renew deadline stops leading, before any follower may take over. Decisions use `ctx.clock`; only
 * the loop's scheduling uses real time.
 *
 * @example
 * ```ts
 * const elector = createLeaderElector(vdi.context, {
 *   namespace: 'corral-vms',
 *   onStarted: () => engine.start(),
 *   onStopped: () => engine.stop(),
 * });
 * const engine = createSessionEngine(vdi.context, { namespaces: ['corral-vms'], fence: elector.fence });
 * elector.start();
 * process.once('SIGTERM', () => void elector.stop());
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options or timings out of order.
 * @category leader
 */
export function createLeaderElector(ctx: VdiContext, options: LeaderElectorOptions): LeaderElector {
  const parsed = parseOptions(optionsSchema, options, 'createLeaderElector');
  const timings: LeaderElectionTimings = {
    leaseDurationMs: parsed.leaseDurationMs ?? defaultLeaderElectionTimings.leaseDurationMs,
    renewDeadlineMs: parsed.renewDeadlineMs ?? defaultLeaderElectionTimings.renewDeadlineMs,
    retryPeriodMs: parsed.retryPeriodMs ?? defaultLeaderElectionTimings.retryPeriodMs,
  };
  checkLeaderElectionTimings(timings);
  const { namespace } = parsed;
  const leaseName = parsed.leaseName ?? defaultLeaderLeaseName;
  const identity = parsed.identity ?? defaultLeaderIdentity();
  const log = parsed.log ?? (() => {});
  const { cluster, clock } = ctx;

  let observed: LeaderObservation | undefined;
  // the Lease as this replica last wrote it while holding it
  let held: LeaseObject | undefined;
  let leading: AbortController | undefined;
  let stopping: Promise<void> = Promise.resolve();
  let trying: Promise<boolean> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let started = false;
  let nextTryAt: Date | undefined;

  const isLeader = () => held !== undefined && isLeadershipHeld(held, identity, clock.now(), timings);

  function startLeading(): void {
    if (leading) return;
    leading = new AbortController();
    const { signal } = leading;
    // a new term waits for the end of the last one, so passes of two terms never overlap
    void stopping
      .then(() => {
        if (!signal.aborted) return options.onStarted?.(signal);
      })
      .catch((error: unknown) => log(`leader election: onStarted failed: ${String(error)}`));
  }

  function stopLeading(): void {
    held = undefined;
    if (!leading) return;
    leading.abort();
    leading = undefined;
    const previous = stopping;
    stopping = previous.then(async () => {
      try {
        await options.onStopped?.();
      } catch (error) {
        log(`leader election: onStopped failed: ${String(error)}`);
      }
    });
  }

  async function attempt(): Promise<boolean> {
    try {
      const lease = await cluster.getLease(namespace, leaseName);
      observed = observeLeaderLease(observed, lease, clock.now());
      const now = clock.now();
      const step = planLeaderStep({
        namespace,
        name: leaseName,
        lease,
        identity,
        observedAt: observed.at,
        now,
        timings,
      });
      if (step.kind === 'follow') {
        stopLeading();
        nextTryAt = step.retryAt;
        return false;
      }
      const written =
        step.kind === 'create'
          ? await cluster.createLease(namespace, step.lease)
          : await cluster.replaceLease(namespace, step.lease);
      observed = observeLeaderLease(observed, written, now);
      held = written;
      startLeading();
    } catch (error) {
      // a lost race is a conflict: another replica wrote first, and the next read shows whom
      if (!isVdiError(error, 'CONFLICT')) log(`leader election: ${String(error)}`);
    }
    nextTryAt = undefined;
    if (!isLeader()) stopLeading();
    return isLeader();
  }

  // The fence's reads in flight: the calls that come while one is in flight share the next one, issued after them,
  // so a pass's concurrent writes cost one read, and each call still sees every change made before it began.
  let fenceRead: Promise<LeaseObject | undefined> | undefined;
  let nextFenceRead: Promise<LeaseObject | undefined> | undefined;

  function readForFence(): Promise<LeaseObject | undefined> {
    const issue = () => {
      const read = cluster.getLease(namespace, leaseName);
      fenceRead = read;
      const forget = () => {
        if (fenceRead === read) fenceRead = undefined;
      };
      read.then(forget, forget);
      return read;
    };
    if (fenceRead === undefined) return issue();
    nextFenceRead ??= fenceRead
      .then(
        () => {},
        () => {},
      )
      .then(() => {
        nextFenceRead = undefined;
        return issue();
      });
    return nextFenceRead;
  }

  function tryAcquireOrRenew(): Promise<boolean> {
    trying ??= attempt().finally(() => {
      trying = undefined;
    });
    return trying;
  }

  function schedule(): void {
    if (!started) return;
    const now = clock.now().getTime();
    const delay = nextTryAt ? Math.max(0, nextTryAt.getTime() - now) : timings.retryPeriodMs;
    timer = setTimeout(
      () => void tryAcquireOrRenew().finally(schedule),
      Math.min(delay, timings.retryPeriodMs),
    );
    // the elector alone never keeps a process alive
    timer.unref();
  }

  return {
    identity,
    namespace,
    leaseName,
    timings,
    isLeader,
    tryAcquireOrRenew,
    start() {
      if (started) return;
      started = true;
      void tryAcquireOrRenew().finally(schedule);
    },
    async stop() {
      started = false;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await trying;
      stopLeading();
      await stopping;
      try {
        const release = planLeaderRelease(
          await cluster.getLease(namespace, leaseName),
          identity,
          clock.now(),
        );
        if (release) await cluster.replaceLease(namespace, release);
      } catch (error) {
        // a Lease another replica wrote meanwhile is no longer ours to release
        if (!isVdiError(error, 'CONFLICT'))
          log(`leader election: releasing the Lease failed: ${String(error)}`);
      }
    },
    async fence() {
      if (isLeader() && isLeadershipHeld(await readForFence(), identity, clock.now(), timings)) return;
      stopLeading();
      throw new VdiError(
        'NOT_LEADER',
        `This replica (${identity}) no longer holds the leader Lease ${namespace}/${leaseName}, so it makes no session writes; the replica that holds it does.`,
        { details: { identity, namespace, leaseName } },
      );
    },
  };
}
