import { VdiError } from '../errors.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { type ClaimLiveness, type ClaimMarks, classifyClaim, classifyMemberClaim } from './claim-liveness.js';

/**
 * What {@link classifyMember} looks at: one pool member's VM, its claim Lease if there is one, who asks, and when.
 *
 * @category claims
 */
export interface MemberFacts {
  /** The member's VirtualMachine as read from the cluster. */
  vm: VirtualMachine;
  /** The Lease named `leaseNameFor(member)`, as read from the cluster; `undefined` when there is none. */
  lease?: LeaseObject | undefined;
  /** The caller's exact identity, as the request pipeline authenticated it. */
  identity: string;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

/** What {@link classifyPoolMember} looks at: a member's facts from its backend, its Lease, who asks, and when. @category claims */
export interface PoolMemberFacts {
  /** The member as its backend reports it. */
  member: ClaimMarks;
  /** The Lease named `leaseNameFor(member)`, as read from the cluster; `undefined` when there is none. */
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
 * Decides what one pool member is to one caller: {@link classifyClaim}'s answer, told from the caller's side. A
 * member whose Lease is gone but whose VM may still run (`orphan-*`) is never handed to a second user silently,
 * and is never stranded either: its user can claim it back, and an administrator can release it.
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
  checkIdentity(identity);
  return tellCaller(classifyClaim({ vm, lease, now }), vm.metadata.name ?? '', identity);
}

/**
 * {@link classifyMember} for a member as its backend reports it, of any kind: {@link classifyMemberClaim}'s
 * answer, told from the caller's side.
 *
 * @example
 * ```ts
 * const state = classifyPoolMember({ member: facts, lease, identity: 'alice@example.com', now: clock.now() });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` as {@link classifyMember} does.
 * @category claims
 */
export function classifyPoolMember(facts: PoolMemberFacts): MemberClassification {
  const { member, lease, identity, now } = facts;
  checkIdentity(identity);
  return tellCaller(classifyMemberClaim({ member, lease, now }), member.member, identity);
}

/** {@link classifyPoolMember} from the member's claim as {@link classifyMemberClaim} already told it. */
export function tellPoolMember(claim: ClaimLiveness, member: string, identity: string): MemberClassification {
  checkIdentity(identity);
  return tellCaller(claim, member, identity);
}

function checkIdentity(identity: string): void {
  if (identity === '') {
    throw new VdiError(
      'INVALID_INPUT',
      'The identity is empty; pass the login the request pipeline authenticated.',
    );
  }
}

function tellCaller(claim: ClaimLiveness, member: string, identity: string): MemberClassification {
  switch (claim.kind) {
    case 'deleting':
      return { kind: 'unavailable', member, reason: 'deleting' };
    case 'free':
      return { kind: 'free', member };
    case 'stale':
      return { kind: 'stale', member, reason: 'no-holder', resourceVersion: claim.resourceVersion };
    case 'expired': {
      const { holder, expiredAt, resourceVersion } = claim;
      return {
        kind: 'stale',
        member,
        reason: 'expired',
        previousHolder: holder,
        ...(expiredAt ? { expiredAt } : {}),
        resourceVersion,
      };
    }
    case 'held': {
      const { kind: _, ...held } = claim;
      return held.holder === identity
        ? { kind: 'held-by-caller', member, ...held }
        : { kind: 'held-by-other', member, holder: held.holder, expiresAt: held.expiresAt };
    }
    case 'orphan':
      return {
        kind: claim.holder === identity ? 'orphan-adoptable' : 'orphan-held-by-other',
        member,
        holder: claim.holder,
      };
    case 'legacy': {
      const kind = claim.holder === identity ? 'legacy-adoptable' : 'legacy-held-by-other';
      return { kind, member, user: claim.holder, ...(claim.claimedAt ? { claimedAt: claim.claimedAt } : {}) };
    }
  }
}
