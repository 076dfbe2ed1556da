import type { MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { leaseMemberLabel, leaseNamePrefix, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import { classifyLease, classifyMemberClaim, isClaimable } from './claim-liveness.js';
import { type MemberClassification, tellPoolMember } from './classify-member.js';
import { isReleasing } from './releasing-mark.js';
import { isResetDue } from './reset-mark.js';

/**
 * Which free member a claim takes: `random` spreads self-service claimants out, so concurrent claims rarely
 * collide; `lowest` takes the lowest in natural order, as an administrator handing out desktops expects.
 *
 * @category claims
 */
export type ClaimOrder = 'random' | 'lowest';

/** What {@link planClaim} looks at. @category claims */
export interface PlanClaimInput {
  /** Every member of the pool, as its backend reports them, in any order. */
  members: readonly MemberFacts[];
  /** The pool's claim Leases as read from the cluster; a Lease of no listed member is ignored. */
  leases: readonly LeaseObject[];
  /** The claimant's exact identity. */
  identity: string;
  order: ClaimOrder;
  /** A number in [0, 1), as `Math.random` gives; only the `random` order calls it, once. */
  random: () => number;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
  /**
   * Members not to take this time: those this claim lost a race for since it read the pool, and those another
   * claim of the same process is taking.
   */
  exclude?: ReadonlySet<string> | undefined;
}

/**
 * What a claim does, decided once from the pool as read:
 *
 * - `renew`: the identity already holds `member` through `lease`; renew that Lease and return the same session.
 *   A claim being released (`corral.dev/vdi-releasing`) is not renewed: its holder gets another member. Nor is a
 *   claim not handed out yet (the member does not show its session) while the member is going down: another claim
 *   of the identity took it and will give it back, and the last holder's guest still runs on it, so it is refused
 *   as `goingDown` and waited for.
 * - `adopt`: `member` shows the identity as its user without a Lease (a v0.6.0 assignment, or a Lease that was
 *   lost); create its Lease and keep the desktop as it is.
 * - `create`: nobody holds `member`; create its Lease (first writer wins).
 * - `replace`: `member`'s Lease expired or names nobody; replace it conditional on `resourceVersion`, counting
 *   one more transition. Taking over another identity's expired claim sets `reset`: the member is reset (stopped,
 *   or recreated when ephemeral) and started again before the new holder gets it, as its previous guest may still
 *   run. So does taking over any claim still marked reset-due (a takeover that expired before its reset ran).
 * - `refuse`: `POOL_NOT_FOUND` when the pool has no member, `NO_FREE_MEMBER` when every member has a user;
 *   `goingDown` counts the unheld members passed over because their previous instance still exists, and the
 *   members whose claim is being released (`corral.dev/vdi-releasing`): both are free in a moment. Also
 *   `NO_FREE_MEMBER` with `resetting` when the identity's live claim is of a member not listed or being deleted
 *   (a recreate under way, or a list older than a grow): that is its desktop, so it gets no second one.
 *
 * Among the free members, one already running (a warm spare) is taken before one that must start.
 *
 * A free member whose previous instance still exists (it is `stopping`, or `previousInstance` is set) is passed
 * over until it is gone, so the next holder never gets a member the last one's guest still runs on.
 *
 * Every plan but a refusal says whether to `start` the member once the claim holds, and whether a reset is still
 * `resetDue` first (a takeover that stopped between its Lease write and the reset).
 *
 * @category claims
 */
export type ClaimPlan =
  | ({ kind: 'renew'; member: MemberFacts; lease: LeaseObject } & ClaimFollowUp)
  | ({ kind: 'adopt'; member: MemberFacts; from: 'legacy' | 'orphan' } & ClaimFollowUp)
  | ({ kind: 'create'; member: MemberFacts } & ClaimFollowUp)
  | ({
      kind: 'replace';
      member: MemberFacts;
      resourceVersion: string;
      leaseTransitions: number;
      /** Another identity's claim expired on it: reset the member before handing it out. */
      reset: boolean;
    } & ClaimFollowUp)
  | {
      kind: 'refuse';
      code: 'POOL_NOT_FOUND' | 'NO_FREE_MEMBER';
      goingDown: number;
      /** The member the identity holds while it is gone or being deleted (a recreate under way). */
      resetting?: string;
    };

/** What a claim does once its Lease is written. @category claims */
export interface ClaimFollowUp {
  /** Start the member: it does not run yet. */
  start: boolean;
  /** The claim's Lease says a takeover's reset has not finished: reset the member before anything else. */
  resetDue: boolean;
}

/**
 * Decides which member of a pool a claim takes, and how. Pure: the caller reads the pool, executes the plan,
 * and plans again when a Lease write loses a race.
 *
 * @example
 * ```ts
 * const plan = planClaim({ members, leases, identity: 'alice', order: 'random', random: Math.random, now });
 * if (plan.kind === 'create') await createLease(plan.member);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the identity is empty, `now` is not a valid date, or `random`
 *   gives a number outside [0, 1).
 * @category claims
 */
export function planClaim(input: PlanClaimInput): ClaimPlan {
  const { members, identity, now } = input;
  const leaseByName = new Map(input.leases.map((lease) => [lease.metadata.name, lease]));
  // natural order, so what a plan picks never depends on the order a list (a cached one, say) came in
  const ranks = rankNaturally(members.map((member) => member.member));
  const entries = members.map((member) => {
    const lease = leaseByName.get(leaseNameFor(member.member));
    const claim = classifyMemberClaim({ member, lease, now });
    return {
      member,
      rank: ranks.get(member.member) ?? 0,
      lease,
      state: tellPoolMember(claim, member.member, identity),
      claim,
    };
  });
  if (entries.length === 0) return { kind: 'refuse', code: 'POOL_NOT_FOUND', goingDown: 0 };

  // a claim being released is the release's: it is neither renewed nor handed out until the Lease goes
  const held = lowest(
    entries.filter((entry) => entry.state.kind === 'held-by-caller' && !isReleasing(entry.lease)),
  );
  if (held?.lease) {
    const { member, lease } = held;
    // another claim of the identity took it free and has not handed it out: the last holder's guest goes first
    if (!isResetDue(lease) && !isHandedOut(member, lease))
      return { kind: 'refuse', code: 'NO_FREE_MEMBER', goingDown: 1 };
    return { kind: 'renew', member, lease, ...followUp(member), resetDue: isResetDue(lease) };
  }
  const resetting = findResetting(input, entries);
  if (resetting !== undefined) return { kind: 'refuse', code: 'NO_FREE_MEMBER', goingDown: 0, resetting };
  const excluded = (entry: PlanEntry) => input.exclude?.has(entry.member.member) ?? false;
  const adoptable = lowest(entries.filter((entry) => isAdoptable(entry) && !excluded(entry)));
  if (adoptable) return planTake(adoptable, identity);
  const unheld = entries.filter((entry) => isClaimable(entry.claim) && !excluded(entry));
  const open = unheld.filter((entry) => !isGoingDown(entry.member));
  // a member already running (a warm spare) is handed out before one that must start
  const warm = open.filter((entry) => entry.member.power === 'running');
  const pick = warm.length > 0 ? warm : open;
  pick.sort((left, right) => left.rank - right.rank);
  const chosen = input.order === 'random' ? pick[randomIndex(input.random, pick.length)] : pick[0];
  if (chosen === undefined) {
    // a claim being released is as good as a member going down: free in a moment
    const released = entries.filter((entry) => entry.lease && isReleasing(entry.lease) && !excluded(entry));
    return {
      kind: 'refuse',
      code: 'NO_FREE_MEMBER',
      goingDown: unheld.length - open.length + released.length,
    };
  }
  return planTake(chosen, identity);
}

// The member of the identity's live claim (not being released) whose member is not listed, or is being deleted.
function findResetting(input: PlanClaimInput, entries: readonly PlanEntry[]): string | undefined {
  // only claims of members count: a waiter's Lease of the pool is held by the identity too
  const live = input.leases.filter(
    (candidate) =>
      candidate.spec.holderIdentity === input.identity &&
      (candidate.metadata.name ?? '').startsWith(leaseNamePrefix) &&
      !isReleasing(candidate) &&
      classifyLease(candidate, input.now).kind === 'held',
  );
  if (live.length === 0) return undefined;
  const listed = new Set(
    entries.filter((entry) => !entry.member.deleting).map((entry) => leaseNameFor(entry.member.member)),
  );
  const lease = live.find((candidate) => !listed.has(candidate.metadata.name ?? ''));
  if (lease === undefined) return undefined;
  return lease.metadata.labels?.[leaseMemberLabel] ?? memberFromLeaseName(lease.metadata.name ?? '') ?? '';
}

/**
 * Whether a claim's member is its holder's to use: it shows the claim's session (the claim was presented, so what
 * runs on it is the holder's), or no previous instance of it is going down. A claim that won a member's Lease and
 * has not presented it yet while the last holder's guest still goes down is not: neither a claim nor a start of
 * its holder may start that member until the guest is gone.
 *
 * @category claims
 */
export function isHandedOut(
  member: Pick<MemberFacts, 'power' | 'previousInstance' | 'presentation'>,
  lease: LeaseObject,
): boolean {
  const session = lease.metadata.annotations?.[sessionIdAnnotation];
  return !isGoingDown(member) || (session !== undefined && member.presentation.sessionId === session);
}

/**
 * Whether a member's previous instance still exists (it is stopping, or an instance of an earlier run is left):
 * the last holder's guest may still run on it, so it is not handed out yet.
 *
 * @category claims
 */
export function isGoingDown(member: Pick<MemberFacts, 'power' | 'previousInstance'>): boolean {
  return member.power === 'stopping' || member.previousInstance;
}

interface PlanEntry {
  member: MemberFacts;
  /** The member's place among the pool's names in natural order. */
  rank: number;
  lease: LeaseObject | undefined;
  state: MemberClassification;
}

function isAdoptable(entry: PlanEntry): boolean {
  return entry.state.kind === 'legacy-adoptable' || entry.state.kind === 'orphan-adoptable';
}

function planTake(chosen: PlanEntry, identity: string): Exclude<ClaimPlan, { kind: 'renew' | 'refuse' }> {
  if (isAdoptable(chosen)) {
    const from = chosen.state.kind === 'legacy-adoptable' ? 'legacy' : 'orphan';
    return { kind: 'adopt', member: chosen.member, from, ...followUp(chosen.member) };
  }
  if (chosen.lease === undefined)
    return { kind: 'create', member: chosen.member, ...followUp(chosen.member) };
  const { state } = chosen;
  // another identity's guest may still run on it; or the expired claim was a takeover whose reset never ran
  const reset =
    (state.kind === 'stale' &&
      state.reason === 'expired' &&
      state.previousHolder !== undefined &&
      state.previousHolder !== identity) ||
    isResetDue(chosen.lease);
  return {
    kind: 'replace',
    member: chosen.member,
    resourceVersion: chosen.lease.metadata.resourceVersion ?? '',
    leaseTransitions: (chosen.lease.spec.leaseTransitions ?? 0) + 1,
    reset,
    ...followUp(chosen.member),
  };
}

function followUp(member: MemberFacts): ClaimFollowUp {
  return { start: member.power !== 'running', resetDue: false };
}

function randomIndex(random: () => number, length: number): number {
  if (length === 0) return 0;
  const value = random();
  if (!(value >= 0 && value < 1)) {
    throw new VdiError(
      'INVALID_INPUT',
      `The random source gave ${value}; pass one that gives [0, 1), such as Math.random.`,
    );
  }
  return Math.floor(value * length);
}

function lowest(entries: readonly PlanEntry[]): PlanEntry | undefined {
  let found: PlanEntry | undefined;
  for (const entry of entries) if (found === undefined || entry.rank < found.rank) found = entry;
  return found;
}

// a few pools' orders, each under the key of its set of names
const maxRankedPools = 16;
const rankedPools = new Map<string, Map<string, number>>();

/**
 * Each name's place in natural order. A claim plans over its whole pool on every try, and comparing names
 * naturally costs string splitting on every comparison, so the order of a set of names is kept once worked out:
 * a pool's names seldom change while its members are claimed.
 */
function rankNaturally(names: readonly string[]): Map<string, number> {
  // member names hold no `/`, so the joined sorted names tell one set from another
  const key = [...names].sort().join('/');
  let ranks = rankedPools.get(key);
  if (ranks === undefined) {
    ranks = new Map([...names].sort(compareNatural).map((name, index) => [name, index]));
    if (rankedPools.size >= maxRankedPools) rankedPools.clear();
    rankedPools.set(key, ranks);
  }
  return ranks;
}
