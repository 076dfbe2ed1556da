import type { MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  leaseDurationSeconds,
  poolLabel,
  sessionIdAnnotation,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import { isReleasing } from './releasing-mark.js';
import { isResetDue } from './reset-mark.js';

/**
 * What a claim Lease says at one instant.
 *
 * - `held`: it names a holder and binds until `expiresAt`.
 * - `expired`: it names a holder but ran out (or carries no readable time). Nobody holds the member: its holder
 *   is told `CLAIM_EXPIRED`, and any claimant may take the member by replacing the Lease.
 * - `stale`: it names no holder; any claimant may take the member by replacing it.
 *
 * @category claims
 */
export type LeaseLiveness =
  | {
      kind: 'held';
      holder: string;
      expiresAt: Date;
      /** The `corral.dev/vdi-session-id` annotation, when present. */
      sessionId?: string;
      acquireTime?: Date;
      renewTime?: Date;
      /** Renew, replace or delete the Lease with this precondition. */
      resourceVersion: string;
    }
  | { kind: 'expired'; holder: string; expiredAt?: Date; resourceVersion: string }
  | { kind: 'stale'; resourceVersion: string };

/**
 * Whether a pool member is claimed, and by whom: the one answer claims, sessions, pools, connect and the broker
 * all use. A Lease decides whenever one exists; without one, the VM's own marks count.
 *
 * - `held`, `expired`, `stale`: what its Lease says (see {@link LeaseLiveness}).
 * - `free`: no Lease, and nothing on the VM names a user (or the VM is stopped, which is what a finished
 *   release leaves).
 * - `legacy`: a v0.6.0 assignment, kept only as the `corral.dev/vdi-assigned-to` label; it has no Lease.
 * - `orphan`: the VM names a current holder (the `corral.dev/vdi-assigned-to` annotation) and may still run,
 *   but its Lease is gone, for example deleted by hand. It may still run that user's session.
 * - `deleting`: the VM is being deleted.
 *
 * @category claims
 */
export type ClaimLiveness =
  | LeaseLiveness
  | { kind: 'free' }
  | { kind: 'legacy'; holder: string; claimedAt?: string }
  | { kind: 'orphan'; holder: string; claimedAt?: string }
  | { kind: 'deleting' };

/** What {@link classifyClaim} looks at. @category claims */
export interface ClaimFacts {
  /** The member's VirtualMachine as read from the cluster. */
  vm: VirtualMachine;
  /** The Lease named `leaseNameFor(member)`, as read from the cluster; `undefined` when there is none. */
  lease?: LeaseObject | undefined;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

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
 * Whether a Lease's time ran out at `now`. It binds up to and including {@link leaseExpiresAt}; a Lease with no
 * readable time counts as expired, so a malformed Lease cannot hold a member forever.
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

function checkNow(now: Date): void {
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new VdiError('INVALID_INPUT', 'The time to classify at is not a valid Date; pass clock.now().');
  }
}

/**
 * Reads a claim Lease at `now`: held while it names a holder and {@link isLeaseExpired} says no.
 *
 * @example
 * ```ts
 * if (classifyLease(lease, clock.now()).kind === 'held') await renew(lease);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `now` is not a valid date.
 * @category claims
 */
export function classifyLease(lease: LeaseObject, now: Date): LeaseLiveness {
  checkNow(now);
  const resourceVersion = lease.metadata.resourceVersion ?? '';
  const holder = lease.spec.holderIdentity;
  if (!holder) return { kind: 'stale', resourceVersion };
  const expiresAt = leaseExpiresAt(lease);
  if (expiresAt === undefined || isLeaseExpired(lease, now)) {
    return { kind: 'expired', holder, ...(expiresAt ? { expiredAt: expiresAt } : {}), resourceVersion };
  }
  const sessionId = lease.metadata.annotations?.[sessionIdAnnotation];
  const acquireTime = lease.spec.acquireTime === undefined ? undefined : parseRfc3339(lease.spec.acquireTime);
  const renewTime = lease.spec.renewTime === undefined ? undefined : parseRfc3339(lease.spec.renewTime);
  return {
    kind: 'held',
    holder,
    expiresAt,
    ...(sessionId ? { sessionId } : {}),
    ...(acquireTime ? { acquireTime } : {}),
    ...(renewTime ? { renewTime } : {}),
    resourceVersion,
  };
}

/**
 * What claim liveness reads of a member, whatever its kind: its name, pool, whether it is being deleted, its
 * power and the presentation copy it carries, and whether an instance of an earlier run is left, where the reader
 * knows it. A backend's {@link MemberFacts} has all of them.
 *
 * @category claims
 */
export type ClaimMarks = Pick<MemberFacts, 'member' | 'pool' | 'deleting' | 'power' | 'presentation'> &
  Partial<Pick<MemberFacts, 'previousInstance'>>;

/** What {@link classifyMemberClaim} looks at. @category claims */
export interface MemberClaimFacts {
  /** The member as its backend reports it. */
  member: ClaimMarks;
  /** The Lease named `leaseNameFor(member)`, as read from the cluster; `undefined` when there is none. */
  lease?: LeaseObject | undefined;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

/**
 * What a member without a Lease says about its user. A member that still carries the current
 * `corral.dev/vdi-assigned-to` annotation is what a release that stopped half way, or a Lease deleted by hand,
 * leaves behind. It counts as `free` once the member is `stopped`, because a stopped member holds no live
 * session; while it may still run, it is an `orphan`. A pool member with only the label (what v0.6.0 wrote,
 * see `classifyLegacy`) is a `legacy` assignment.
 *
 * @category claims
 */
export function classifyLeaselessMember(
  member: Pick<ClaimMarks, 'pool' | 'power' | 'presentation'>,
): Extract<ClaimLiveness, { kind: 'free' | 'legacy' | 'orphan' }> {
  const { holder, label, claimedAt } = member.presentation;
  if (holder) {
    if (member.power === 'stopped') return { kind: 'free' };
    return { kind: 'orphan', holder, ...(claimedAt ? { claimedAt } : {}) };
  }
  if (!member.pool || !label) return { kind: 'free' };
  return { kind: 'legacy', holder: label, ...(claimedAt ? { claimedAt } : {}) };
}

/**
 * What a member VM without a Lease says about its user: {@link classifyLeaselessMember} of the VM's marks.
 *
 * @category claims
 */
export function classifyLeaselessVm(
  vm: VirtualMachine,
): Extract<ClaimLiveness, { kind: 'free' | 'legacy' | 'orphan' }> {
  return classifyLeaselessMember(readClaimMarks(vm));
}

/**
 * Decides whether a pool member is claimed at `now`, and by whom, from its backend's facts and its Lease. See
 * {@link ClaimLiveness} for the answers.
 *
 * @example
 * ```ts
 * const claim = classifyMemberClaim({ member: facts, lease, now: clock.now() });
 * if (isClaimable(claim)) await takeMember();
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `now` is not a valid date, the member has no name, or the Lease
 *   is not the member's (another name, or no `resourceVersion` because it was not read from the cluster).
 * @category claims
 */
export function classifyMemberClaim(facts: MemberClaimFacts): ClaimLiveness {
  const { member, lease, now } = facts;
  checkNow(now);
  if (member.member === '') {
    throw new VdiError('INVALID_INPUT', 'The member has no name; pass the member as its backend read it.');
  }
  if (lease !== undefined) checkLease(member.member, lease);
  if (member.deleting) return { kind: 'deleting' };
  return lease === undefined ? classifyLeaselessMember(member) : classifyLease(lease, now);
}

/**
 * Decides whether a pool member VM is claimed at `now`, and by whom: {@link classifyMemberClaim} of the VM's
 * marks. See {@link ClaimLiveness} for the answers.
 *
 * @example
 * ```ts
 * const claim = classifyClaim({ vm, lease, now: clock.now() });
 * if (isClaimable(claim)) await takeMember();
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `now` is not a valid date, the VM has no name, or the Lease is
 *   not the member's (another name, or no `resourceVersion` because it was not read from the cluster).
 * @category claims
 */
export function classifyClaim(facts: ClaimFacts): ClaimLiveness {
  const { vm, lease, now } = facts;
  checkNow(now);
  if ((vm.metadata.name ?? '') === '') {
    throw new VdiError('INVALID_INPUT', 'The VM has no metadata.name; pass the VM as read from the cluster.');
  }
  return classifyMemberClaim({ member: readClaimMarks(vm), lease, now });
}

/**
 * The identity a member belongs to now: the holder of a live Lease, of a v0.6.0 assignment, or of an orphaned
 * presentation copy. `undefined` for a member nobody holds, including one whose Lease expired.
 *
 * @example
 * ```ts
 * const mine = claimHolder(classifyClaim({ vm, lease, now })) === identity;
 * ```
 * @category claims
 */
export function claimHolder(claim: ClaimLiveness): string | undefined {
  return claim.kind === 'held' || claim.kind === 'legacy' || claim.kind === 'orphan'
    ? claim.holder
    : undefined;
}

/**
 * Whether a live claim Lease is not a claim yet: a claim's take wrote it on a member that is still going down (it
 * is stopping, or an instance of an earlier run is left) and does not show the Lease's session, and no release or
 * takeover has marked it. The claim that wrote it is waiting for the last holder's guest to go: it then hands the
 * member out (its copy shows the session, and it is a claim), or gives the Lease back. Until then every reader shows
 * the member as nobody's and not free: pool views, the desktops lists, the metrics.
 *
 * @category claims
 */
export function isTakeUnderWay(member: ClaimMarks, lease: LeaseObject): boolean {
  const session = lease.metadata.annotations?.[sessionIdAnnotation];
  const goingDown = member.power === 'stopping' || member.previousInstance === true;
  // every take writes a session ID: a Lease without one is an older claim's
  return (
    session !== undefined &&
    goingDown &&
    !member.deleting &&
    !isReleasing(lease) &&
    !isResetDue(lease) &&
    member.presentation.sessionId !== session
  );
}

/**
 * The identity a reader shows as a member's holder: {@link claimHolder} of its claim, except that a Lease whose
 * take is still under way ({@link isTakeUnderWay}) is nobody's claim yet.
 *
 * @example
 * ```ts
 * const holder = shownHolder({ member: facts, lease, now: clock.now() });
 * ```
 * @category claims
 */
export function shownHolder(facts: MemberClaimFacts): string | undefined {
  const { member, lease } = facts;
  const claim = classifyMemberClaim(facts);
  if (claim.kind === 'held' && lease !== undefined && isTakeUnderWay(member, lease)) return undefined;
  return claimHolder(claim);
}

/**
 * Whether a claimant may take the member: nobody holds it, and it is not being deleted. A `free` member is
 * taken by creating its Lease; an `expired` or `stale` one by replacing the Lease with its `resourceVersion`.
 *
 * @category claims
 */
export function isClaimable(
  claim: ClaimLiveness,
): claim is Extract<ClaimLiveness, { kind: 'free' | 'expired' | 'stale' }> {
  return claim.kind === 'free' || claim.kind === 'expired' || claim.kind === 'stale';
}

function checkLease(member: string, lease: LeaseObject): void {
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

function asksToRun(vm: VirtualMachine): boolean {
  const { running, runStrategy } = vm.spec;
  const startPending = vm.status?.stateChangeRequests?.some((request) => request.action === 'Start') ?? false;
  return running === true || runStrategy === 'Always' || runStrategy === 'RerunOnFailure' || startPending;
}

// KubeVirt shows an instance that still exists as Running or Stopping until it is gone
const instanceShown = new Set(['Running', 'Stopping', 'Terminating']);

function asksToStop(vm: VirtualMachine): boolean {
  const { running, runStrategy } = vm.spec;
  return !asksToRun(vm) && (runStrategy === 'Halted' || (runStrategy === undefined && running === false));
}

function powerOf(vm: VirtualMachine): ClaimMarks['power'] {
  if (!asksToRun(vm) && vm.status?.printableStatus === 'Stopped') return 'stopped';
  const shown = vm.status?.printableStatus;
  return asksToStop(vm) && shown !== undefined && instanceShown.has(shown) ? 'stopping' : 'unknown';
}

/**
 * The {@link ClaimMarks} of a member VM, for readers that hold the VM itself: `stopped`, `stopping` (asked to stop
 * while KubeVirt still shows its instance), or `unknown` for any other power.
 *
 * @category claims
 */
export function readClaimMarks(vm: VirtualMachine): ClaimMarks {
  const labels = vm.metadata.labels ?? {};
  const annotations = vm.metadata.annotations ?? {};
  return {
    member: vm.metadata.name ?? '',
    pool: labels[poolLabel] ?? '',
    deleting: vm.metadata.deletionTimestamp !== undefined,
    power: powerOf(vm),
    presentation: {
      holder: annotations[assignedToKey],
      label: labels[assignedToKey],
      claimedAt: annotations[claimedAtAnnotation],
      sessionId: annotations[sessionIdAnnotation],
    },
  };
}
