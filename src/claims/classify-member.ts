import { VdiError } from '../errors.js';
import { assignedToKey, leaseDurationSeconds, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';
import { classifyLegacy } from '../upgrade/classify-legacy.js';
import { leaseNameFor } from './lease-name.js';
import { parseRfc3339 } from './parse-time.js';

/**
 * What {@link classifyMember} looks at: one pool member's VM, its claim Lease if there is one, who asks, and when.
 *
 * @category claims
 */
export interface MemberFacts {
  /** The member's VirtualMachine as read from the cluster. */
  vm: VirtualMachine;
  /** The Lease named {@link leaseNameFor}(member), as read from the cluster; `undefined` when there is none. */
  lease?: LeaseObject | undefined;
  /** The caller's exact identity, as the request pipeline authenticated it. */
  identity: string;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

/**
 * The state of one pool member as seen by one caller. Every variant names the `member` (the VM's name).
 *
 * - `free`: nobody holds the member; a claim creates its Lease.
 * - `held-by-caller`: the caller holds a live Lease; a claim returns this desktop again.
 * - `held-by-other`: someone else holds a live Lease.
 * - `stale`: a Lease exists but binds nobody, because it expired or names no holder; a claim replaces it with
 *   an update that carries `resourceVersion`, so of several claimants only one wins.
 * - `legacy-adoptable`: a v0.6.0 assignment to exactly the caller's identity; a claim creates the Lease and
 *   keeps the desktop as it is.
 * - `legacy-held-by-other`: a v0.6.0 assignment to someone else; it stays until an administrator releases it.
 * - `orphan-adoptable` / `orphan-held-by-other`: the VM shows a current assignment (the
 *   `corral.dev/vdi-assigned-to` annotation) and is not stopped, but its Lease is gone, for example deleted by
 *   hand. The annotated identity may claim it back; for anyone else it stays taken until an administrator
 *   releases it, because it may still run the previous user's session.
 * - `unavailable`: the VM is being deleted; nobody may claim it.
 *
 * @category claims
 */
export type MemberClassification =
  | { kind: 'free'; member: string }
  | {
      kind: 'held-by-caller';
      member: string;
      holder: string;
      /** The `corral.dev/vdi-session-id` annotation of the Lease, when present. */
      sessionId?: string;
      acquireTime?: Date;
      renewTime?: Date;
      expiresAt: Date;
      /** Renew or release with this precondition. */
      resourceVersion: string;
    }
  | { kind: 'held-by-other'; member: string; holder: string; expiresAt: Date }
  | {
      kind: 'stale';
      member: string;
      reason: 'expired' | 'no-holder';
      /** The identity the Lease named, if any. */
      previousHolder?: string;
      /** When the Lease expired; absent when it names no holder or carries no readable time. */
      expiredAt?: Date;
      /** Replace the Lease with this precondition. */
      resourceVersion: string;
    }
  | { kind: 'legacy-adoptable'; member: string; user: string; claimedAt?: string }
  | { kind: 'legacy-held-by-other'; member: string; user: string; claimedAt?: string }
  | { kind: 'orphan-adoptable'; member: string; holder: string }
  | { kind: 'orphan-held-by-other'; member: string; holder: string }
  | { kind: 'unavailable'; member: string; reason: 'deleting' };

/**
 * When a Lease stops binding: its `renewTime` (or, never renewed, its `acquireTime`) plus its
 * `leaseDurationSeconds` (or, when unset, the SDK's one hour).
 *
 * @returns the instant, or `undefined` when the Lease carries no readable time.
 * @example
 * ```ts
 * leaseExpiresAt({ metadata: {}, spec: { renewTime: '2026-07-02T12:00:00.000000Z', leaseDurationSeconds: 3600 } });
 * // 2026-07-02T13:00:00.000Z
 * ```
 * @category claims
 */
export function leaseExpiresAt(lease: LeaseObject): Date | undefined {
  const { renewTime, acquireTime, leaseDurationSeconds: duration } = lease.spec;
  const from =
    (renewTime === undefined ? undefined : parseRfc3339(renewTime)) ??
    (acquireTime === undefined ? undefined : parseRfc3339(acquireTime));
  if (from === undefined) return undefined;
  const seconds = typeof duration === 'number' && duration > 0 ? duration : leaseDurationSeconds;
  return new Date(from.getTime() + seconds * 1000);
}

/**
 * Whether a Lease no longer binds at `now`. It binds up to and including {@link leaseExpiresAt}; a Lease with
 * no readable time counts as expired, so a malformed Lease cannot hold a member forever.
 *
 * @example
 * ```ts
 * isLeaseExpired(lease, clock.now());
 * ```
 * @category claims
 */
export function isLeaseExpired(lease: LeaseObject, now: Date): boolean {
  const expiresAt = leaseExpiresAt(lease);
  return expiresAt === undefined || now.getTime() > expiresAt.getTime();
}

/**
 * Decides what one pool member is to one caller. The Lease decides ownership whenever it exists; the VM's own
 * labels and annotations count only without one.
 *
 * A VM without a Lease that still carries the current `corral.dev/vdi-assigned-to` annotation is what a release
 * that stopped half way, or a Lease deleted by hand, leaves behind. It counts as `free` only once the VM is
 * stopped (KubeVirt reports `Stopped` and nothing asks it to run), because a stopped member holds no live
 * session and is what a finished release leaves. While it may still run, it is an `orphan-*`, so it is never
 * handed to a second user silently, and is never stranded either: its user can claim it back, and an
 * administrator can release it.
 *
 * @example
 * ```ts
 * const state = classifyMember({ vm, lease, identity: 'alice@example.com', now: clock.now() });
 * if (state.kind === 'free' || state.kind === 'stale') await claim(state);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the identity is empty, `now` is not a valid date, the VM has no
 *   name, or the Lease is not the member's (another name, or no `resourceVersion` because it was not read
 *   from the cluster).
 * @category claims
 */
export function classifyMember(facts: MemberFacts): MemberClassification {
  const { vm, lease, identity, now } = facts;
  const member = vm.metadata.name ?? '';
  checkFacts(member, facts);
  if (vm.metadata.deletionTimestamp) return { kind: 'unavailable', member, reason: 'deleting' };

  if (lease !== undefined) {
    const resourceVersion = lease.metadata.resourceVersion ?? '';
    const holder = lease.spec.holderIdentity;
    const expiresAt = leaseExpiresAt(lease);
    if (!holder) return { kind: 'stale', member, reason: 'no-holder', resourceVersion };
    if (expiresAt === undefined || now.getTime() > expiresAt.getTime()) {
      return {
        kind: 'stale',
        member,
        reason: 'expired',
        previousHolder: holder,
        ...(expiresAt ? { expiredAt: expiresAt } : {}),
        resourceVersion,
      };
    }
    if (holder !== identity) return { kind: 'held-by-other', member, holder, expiresAt };
    const sessionId = lease.metadata.annotations?.[sessionIdAnnotation];
    const acquireTime =
      lease.spec.acquireTime === undefined ? undefined : parseRfc3339(lease.spec.acquireTime);
    const renewTime = lease.spec.renewTime === undefined ? undefined : parseRfc3339(lease.spec.renewTime);
    return {
      kind: 'held-by-caller',
      member,
      holder,
      ...(sessionId ? { sessionId } : {}),
      ...(acquireTime ? { acquireTime } : {}),
      ...(renewTime ? { renewTime } : {}),
      expiresAt,
      resourceVersion,
    };
  }

  const presented = vm.metadata.annotations?.[assignedToKey];
  if (presented) {
    if (isStopped(vm)) return { kind: 'free', member };
    return presented === identity
      ? { kind: 'orphan-adoptable', member, holder: presented }
      : { kind: 'orphan-held-by-other', member, holder: presented };
  }

  const legacy = classifyLegacy(vm);
  if (legacy.kind === 'legacy-assigned') {
    const { user, claimedAt } = legacy;
    const kind = user === identity ? 'legacy-adoptable' : 'legacy-held-by-other';
    return { kind, member, user, ...(claimedAt === undefined ? {} : { claimedAt }) };
  }
  return { kind: 'free', member };
}

function checkFacts(member: string, { lease, identity, now }: MemberFacts): void {
  if (identity === '') {
    throw new VdiError(
      'INVALID_INPUT',
      'The identity is empty; pass the login the request pipeline authenticated.',
    );
  }
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new VdiError('INVALID_INPUT', 'The time to classify at is not a valid Date; pass clock.now().');
  }
  if (member === '') {
    throw new VdiError('INVALID_INPUT', 'The VM has no metadata.name; pass the VM as read from the cluster.');
  }
  if (lease === undefined) return;
  const expected = leaseNameFor(member);
  if (lease.metadata.name !== expected) {
    throw new VdiError(
      'INVALID_INPUT',
      `Lease "${lease.metadata.name ?? ''}" is not the claim of member "${member}"; pass the Lease named "${expected}".`,
      { details: { member, lease: lease.metadata.name, expected } },
    );
  }
  if (!lease.metadata.resourceVersion) {
    throw new VdiError(
      'INVALID_INPUT',
      `Lease "${expected}" has no resourceVersion; pass the Lease as read from the cluster.`,
      { details: { member, lease: expected } },
    );
  }
}

function isStopped(vm: VirtualMachine): boolean {
  const { running, runStrategy } = vm.spec;
  const asksToRun = running === true || runStrategy === 'Always' || runStrategy === 'RerunOnFailure';
  const startPending = vm.status?.stateChangeRequests?.some((request) => request.action === 'Start') ?? false;
  return !asksToRun && !startPending && vm.status?.printableStatus === 'Stopped';
}
