import { VdiError } from '../errors.js';
import type { LeaseObject } from '../kube-objects.js';
import { parseRfc3339 } from '../parse-time.js';

/**
 * How long a leader's hold lasts and how often replicas try, with the meaning of client-go's `leaderelection`.
 *
 * @category leader
 */
export interface LeaderElectionTimings {
  /**
   * How long a follower waits, from the last change of the leader Lease it saw, before it takes the Lease over.
   * The takeover time after a leader dies is at most this plus one retry period.
   */
  leaseDurationMs: number;
  /** How long a leader keeps acting without a successful renewal; then it stops leading. Shorter than the lease duration. */
  renewDeadlineMs: number;
  /** Time between tries to acquire or renew. */
  retryPeriodMs: number;
}

/** client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period. @category leader */
export const defaultLeaderElectionTimings: Readonly<LeaderElectionTimings> = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/**
 * Checks that a leader stops acting before any follower may take over: lease duration > renew deadline >
 * retry period, each a positive whole number of milliseconds.
 *
 * @throws {@link VdiError} `INVALID_INPUT` naming the setting that breaks the order.
 * @category leader
 */
export function checkLeaderElectionTimings(timings: LeaderElectionTimings): void {
  for (const [name, value] of Object.entries(timings)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new VdiError(
        'INVALID_INPUT',
        `Leader election ${name} is ${String(value)}; use a positive whole number of milliseconds.`,
        { details: { [name]: value } },
      );
    }
  }
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = timings;
  if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs)) {
    throw new VdiError(
      'INVALID_INPUT',
      `Leader election needs lease duration > renew deadline > retry period, not ${leaseDurationMs} ms, ${renewDeadlineMs} ms and ${retryPeriodMs} ms; for example 15s, 10s and 2s.`,
      { details: { ...timings } },
    );
  }
}

/** The version of the leader Lease a replica last saw, and when it first saw it by its own clock. @category leader */
export interface LeaderObservation {
  /** The Lease's resourceVersion; `undefined` when there was no Lease. */
  version: string | undefined;
  at: Date;
}

/**
 * Records what a replica sees of the leader Lease: a new version restarts the wait, the same version keeps the
 * time it was first seen. Followers measure the lease from here, by their own clock, so clock skew between
 * replicas does not shorten it.
 *
 * @category leader
 */
export function observeLeaderLease(
  previous: LeaderObservation | undefined,
  lease: LeaseObject | undefined,
  now: Date,
): LeaderObservation {
  const version = lease?.metadata.resourceVersion;
  return previous !== undefined && previous.version === version ? previous : { version, at: now };
}

/** What {@link planLeaderStep} looks at. @category leader */
export interface LeaderStepInput {
  namespace: string;
  name: string;
  /** The leader Lease as just read; `undefined` when there is none. */
  lease: LeaseObject | undefined;
  identity: string;
  /** When this replica first saw this version of the Lease ({@link observeLeaderLease}). */
  observedAt: Date;
  now: Date;
  timings: LeaderElectionTimings;
}

/**
 * One step of a replica: create the Lease (none yet; first writer wins), write it (renew its own hold, or take
 * over one that is free or lapsed, on the read resourceVersion so a lost race is a conflict), or follow the
 * replica that holds it and try again at `retryAt`.
 *
 * @category leader
 */
export type LeaderStep =
  | { kind: 'create'; lease: LeaseObject }
  | { kind: 'update'; lease: LeaseObject; takeover: boolean }
  | { kind: 'follow'; holder: string; retryAt: Date };

function holderOf(lease: LeaseObject | undefined): string {
  return lease?.spec.holderIdentity ?? '';
}

/**
 * Decides a replica's step with client-go's rule: another holder's Lease binds until `leaseDurationMs` after this
 * replica saw it last change; a Lease without a holder (released) is free at once.
 *
 * @example
 * ```ts
 * observed = observeLeaderLease(observed, lease, clock.now());
 * const step = planLeaderStep({ namespace, name, lease, identity, observedAt: observed.at, now: clock.now(), timings });
 * ```
 * @category leader
 */
export function planLeaderStep(input: LeaderStepInput): LeaderStep {
  const { lease, identity, now, timings } = input;
  const holder = holderOf(lease);
  const expiresAt = input.observedAt.getTime() + timings.leaseDurationMs;
  if (holder !== '' && holder !== identity && now.getTime() < expiresAt) {
    return {
      kind: 'follow',
      holder,
      retryAt: new Date(Math.min(now.getTime() + timings.retryPeriodMs, expiresAt)),
    };
  }
  const time = now.toISOString();
  const spec: LeaseObject['spec'] = {
    holderIdentity: identity,
    leaseDurationSeconds: Math.ceil(timings.leaseDurationMs / 1000),
    acquireTime: time,
    renewTime: time,
    leaseTransitions: 0,
  };
  if (lease === undefined) {
    return { kind: 'create', lease: { metadata: { name: input.name, namespace: input.namespace }, spec } };
  }
  const takeover = holder !== identity;
  const transitions = lease.spec.leaseTransitions ?? 0;
  return {
    kind: 'update',
    takeover,
    lease: {
      metadata: lease.metadata,
      spec: {
        ...spec,
        acquireTime: takeover ? time : (lease.spec.acquireTime ?? time),
        leaseTransitions: takeover ? transitions + 1 : transitions,
      },
    },
  };
}

/**
 * The leader Lease with its holder cleared, for a leader that stops: followers may take it at once. `undefined`
 * when this replica does not hold it, so there is nothing to release.
 *
 * @category leader
 */
export function planLeaderRelease(
  lease: LeaseObject | undefined,
  identity: string,
  now: Date,
): LeaseObject | undefined {
  if (lease === undefined || holderOf(lease) !== identity) return undefined;
  const time = now.toISOString();
  const { holderIdentity: _released, ...spec } = lease.spec;
  return { metadata: lease.metadata, spec: { ...spec, leaseDurationSeconds: 1, renewTime: time } };
}

/**
 * Whether `identity` may still act as leader at `now` by this Lease: it names `identity` and its last renewal is
 * less than `renewDeadlineMs` old. The deadline is shorter than the lease duration, so a leader stops acting
 * before any follower may take over; the gap absorbs a write already on its way and small clock skew.
 *
 * @category leader
 */
export function isLeadershipHeld(
  lease: LeaseObject | undefined,
  identity: string,
  now: Date,
  timings: Pick<LeaderElectionTimings, 'renewDeadlineMs'>,
): boolean {
  if (lease === undefined || holderOf(lease) !== identity) return false;
  const text = lease.spec.renewTime;
  const renewedAt = text === undefined ? undefined : parseRfc3339(text);
  return renewedAt !== undefined && now.getTime() < renewedAt.getTime() + timings.renewDeadlineMs;
}
