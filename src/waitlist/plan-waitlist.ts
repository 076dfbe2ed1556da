import type { ClaimQueue, ClaimQueueInput } from '../claim-policy.js';
import { claimHolder, classifyMemberClaim, isClaimable, isLeaseExpired } from '../claims/claim-liveness.js';
import { isGoingDown } from '../claims/plan-claim.js';
import type { DesktopKind, MemberFacts } from '../desktop-backend.js';
import { leaseKindLabel, waiterLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import { parseRfc3339 } from '../parse-time.js';
import { enqueuedAtAnnotation } from './waitlist-keys.js';

/** What {@link planWaitlist} looks at. @category waitlist */
export interface PlanWaitlistInput {
  /** The pool's kind; waiters of a pool of another kind with the same name are not counted. */
  kind: DesktopKind;
  /** Every member of the pool, as its backend reports them. */
  members: readonly MemberFacts[];
  /** The pool's Leases as read (claims and waiters alike); waiter Leases carry `corral.dev/vdi-waiter`. */
  leases: readonly LeaseObject[];
  /** The identity that asks. */
  identity: string;
  /** The time to judge Lease expiry at; pass `clock.now()`. */
  now: Date;
}

/** One live waiter. @category waitlist */
export interface Waiter {
  identity: string;
  enqueuedAt: Date;
  lease: LeaseObject;
}

/**
 * The waiter Leases of a pool's kind among `leases`: those still live, and those expired (or naming nobody) that
 * count for nothing and may be deleted.
 * @category waitlist
 */
export function splitWaiterLeases(
  leases: readonly LeaseObject[],
  kind: DesktopKind,
  now: Date,
): { live: LeaseObject[]; expired: LeaseObject[] } {
  const waiters = leases.filter(
    (lease) =>
      lease.metadata.labels?.[waiterLabel] !== undefined &&
      (lease.metadata.labels[leaseKindLabel] ?? kind) === kind,
  );
  const expired = waiters.filter((lease) => isLeaseExpired(lease, now) || !lease.spec.holderIdentity);
  return { live: waiters.filter((lease) => !expired.includes(lease)), expired };
}

/**
 * The queue of a pool, and what it leaves to one identity:
 *
 * - `queue`: the live waiters, first come first: by enqueue time, then by Lease name. A waiter that already holds
 *   a member of the pool is not waiting any more (its claim landed, its Lease not yet deleted).
 * - `expired`: waiter Leases nobody renewed in time; their waiters are gone, and anyone may delete them.
 * - `position`: the identity's place in the queue, from 1, or `undefined` when it does not wait.
 * - `free`: the members a claim could take now (nobody holds them, nothing of an earlier holder still runs).
 * - `reserved`: the free members this identity must leave to earlier waiters: as many as wait ahead of it (every
 *   waiter, for an identity that does not wait), lowest first in natural order.
 * - `mayTake`: a free member is left to this identity.
 * - `holding`: the identity already holds a member of the pool; its claim returns that one.
 *
 * @category waitlist
 */
export interface WaitlistPlan {
  queue: Waiter[];
  expired: LeaseObject[];
  position: number | undefined;
  free: string[];
  reserved: ReadonlySet<string>;
  mayTake: boolean;
  holding: boolean;
}

/**
 * Decides, first come first served, which free members of a pool an identity may take while others wait. Pure:
 * a claim excludes `reserved` from its choice, and a waiting claim tries only when `mayTake`. Whichever claimant
 * writes a member's claim Lease first still wins it; this only keeps claimants off members held for others.
 *
 * @example
 * ```ts
 * const plan = planWaitlist({ kind: 'vm', members, leases, identity: 'bob', now: clock.now() });
 * if (plan.mayTake) await vdi.claim({ pool: 'devpool', identity: 'bob' });
 * else console.log(`waiting, ${plan.position ?? '-'} of ${plan.queue.length}`);
 * ```
 * @category waitlist
 */
export function planWaitlist(input: PlanWaitlistInput): WaitlistPlan {
  const { kind, members, identity, now } = input;
  const leaseByName = new Map(input.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const holders = new Set<string>();
  const free: string[] = [];
  for (const member of [...members].sort((a, b) => compareNatural(a.member, b.member))) {
    const claim = classifyMemberClaim({ member, lease: leaseByName.get(leaseNameFor(member.member)), now });
    const holder = claimHolder(claim);
    if (holder !== undefined) holders.add(holder);
    if (isClaimable(claim) && !isGoingDown(member)) free.push(member.member);
  }
  const { live, expired } = splitWaiterLeases(input.leases, kind, now);
  const queue = live
    .map((lease) => ({
      identity: lease.spec.holderIdentity ?? '',
      enqueuedAt: enqueuedAtOf(lease),
      lease,
    }))
    .filter((waiter) => !holders.has(waiter.identity))
    .sort(
      (a, b) =>
        a.enqueuedAt.getTime() - b.enqueuedAt.getTime() ||
        (a.lease.metadata.name ?? '').localeCompare(b.lease.metadata.name ?? ''),
    );
  const index = queue.findIndex((waiter) => waiter.identity === identity);
  const position = index === -1 ? undefined : index + 1;
  const ahead = position === undefined ? queue.length : position - 1;
  const reserved = new Set(free.slice(0, ahead));
  return {
    queue,
    expired,
    position,
    free,
    reserved,
    mayTake: free.length > ahead,
    holding: holders.has(identity),
  };
}

// a waiter Lease without a readable enqueue time queues from when its Lease was first acquired, else last
function enqueuedAtOf(lease: LeaseObject): Date {
  const text = lease.metadata.annotations?.[enqueuedAtAnnotation] ?? lease.spec.acquireTime ?? '';
  return parseRfc3339(text) ?? new Date(8.64e15);
}

/**
 * The waitlist's answer to a claim (its part of the claim policy): the free members it leaves to earlier waiters
 * and how many wait. Without a live waiter none are held, and the plan over the whole pool is spared.
 *
 * @category waitlist
 */
export function heldForWaiters(input: ClaimQueueInput): ClaimQueue {
  if (splitWaiterLeases(input.leases, input.kind, input.now).live.length === 0) {
    return { reserved: new Set(), waiters: 0 };
  }
  const plan = planWaitlist(input);
  return { reserved: plan.reserved, waiters: plan.queue.length };
}
