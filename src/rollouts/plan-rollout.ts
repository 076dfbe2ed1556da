import { classifyMemberClaim, isClaimable } from '../claims/claim-liveness.js';
import type { MemberFacts } from '../desktop-backend.js';
import { removalHolder, rollOutAtAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import type { PoolRollout } from '../pool-rollout.js';

/** What {@link planRollout} looks at. @category rollouts */
export interface RolloutInput {
  rollout: PoolRollout;
  /** Every member of the pool as its backend reports it. */
  members: readonly MemberFacts[];
  /** The namespace's claim Leases as read. */
  leases: readonly LeaseObject[];
  /** Free running members the pool keeps for claims now: its schedule's target, else its `minReady`. */
  buffer: number;
  /** The members carrying `corral.dev/vdi-roll-to`, with its value. */
  rollTo: ReadonlyMap<string, string>;
  now: Date;
  /** Count a member warm only once it runs and is Ready, not while it starts (a container pool's Pods). */
  readyOnly?: boolean | undefined;
}

/**
 * One roll-out pass, decided from one read:
 *
 * - `onTarget`, `total`: the members made from the new golden VM, of all the pool's members (those being rebuilt
 *   included), for `3/10 on golden-v2`.
 * - `resume`: rebuilds the journal records as under way: finish each (a keeper stopped half way).
 * - `surge`: free stopped members already on the new golden VM to start first, so that taking running ones away
 *   leaves the buffer running.
 * - `rebuild`: free members to rebuild now, stopped ones first, within `maxUnavailable` and the buffer.
 * - `claimed`: claimed members still on an older golden VM: rebuilt once released (or reclaimed at the deadline).
 * - `markRollTo`: claimed ones that lack the `corral.dev/vdi-roll-to` mark, so an ephemeral release makes them anew
 *   from the new golden VM.
 * - `markDeadline`: claimed ones whose Lease does not carry the deadline yet.
 * - `heldBack`: free running members the buffer keeps from a rebuild now.
 * - `done`: every member is on the new golden VM and nothing is under way.
 *
 * @category rollouts
 */
export interface RolloutPlan {
  onTarget: string[];
  total: number;
  resume: string[];
  surge: string[];
  rebuild: string[];
  claimed: string[];
  markRollTo: string[];
  markDeadline: string[];
  heldBack: number;
  done: boolean;
}

const isStarted = (member: MemberFacts) => member.power === 'running' || member.power === 'starting';
const isReady = (member: MemberFacts) => member.power === 'running';

/**
 * Plans one pass of a pool's roll-out. At most `maxUnavailable` members are rebuilding at once (the journal's
 * included); a free member is rebuilt only while the free running members left are at least the buffer, and when
 * only running ones are left to rebuild, stopped members already rebuilt are started first to take their place.
 * A claimed member is never rebuilt; a paused roll-out finishes its journal and starts nothing new. Pure.
 *
 * @example
 * ```ts
 * const plan = planRollout({ rollout, members, leases, buffer: 2, rollTo: new Map(), now: clock.now() });
 * // { onTarget: ['devpool-1'], total: 10, rebuild: ['devpool-5', 'devpool-6'], … }
 * ```
 * @category rollouts
 */
export function planRollout(input: RolloutInput): RolloutPlan {
  const { rollout, buffer, now } = input;
  const isWarm = input.readyOnly ? isReady : isStarted;
  const journal = new Set(rollout.rebuilding);
  const leaseOf = new Map(input.leases.map((lease) => [lease.metadata.name, lease]));
  const members = [...input.members].sort((left, right) => compareNatural(left.member, right.member));
  const standing = members.filter((member) => !member.deleting || journal.has(member.member));
  const names = new Set([...standing.map((member) => member.member), ...journal]);
  const onTarget = standing
    .filter((member) => member.source === rollout.to && !journal.has(member.member))
    .map((member) => member.member);
  const free: MemberFacts[] = [];
  const claimed: MemberFacts[] = [];
  for (const member of standing) {
    if (journal.has(member.member)) continue;
    const claim = classifyMemberClaim({ member, lease: leaseOf.get(leaseNameFor(member.member)), now });
    if (isClaimable(claim)) free.push(member);
    // a removal's Lease (a stop or a scale-down under way) holds it only for a moment: the next pass sees it
    else if (claim.kind !== 'held' || claim.holder !== removalHolder) claimed.push(member);
  }
  const old = (member: MemberFacts) => member.source !== rollout.to;
  const claimedOld = claimed.filter(old);
  const deadline = rollout.deadline;
  const plan: RolloutPlan = {
    onTarget,
    total: names.size,
    resume: [...journal],
    surge: [],
    rebuild: [],
    claimed: claimedOld.map((member) => member.member),
    markRollTo: claimedOld
      .filter((member) => input.rollTo.get(member.member) !== rollout.to)
      .map((member) => member.member),
    markDeadline:
      deadline === undefined
        ? []
        : claimedOld
            .filter(
              (member) =>
                leaseOf.get(leaseNameFor(member.member))?.metadata.annotations?.[rollOutAtAnnotation] !==
                deadline,
            )
            .map((member) => member.member),
    heldBack: 0,
    done: journal.size === 0 && onTarget.length === names.size,
  };
  if (rollout.paused) return plan;
  let slots = Math.max(0, rollout.maxUnavailable - journal.size);
  const freeOld = free.filter(old);
  const stoppedOld = freeOld.filter((member) => !isWarm(member));
  const warmOld = freeOld.filter(isWarm);
  plan.rebuild = stoppedOld.slice(0, slots).map((member) => member.member);
  slots -= plan.rebuild.length;
  const warmFree = free.filter(isWarm).length;
  const spare = Math.max(0, warmFree - buffer);
  const startable = free.filter(
    (member) => !old(member) && member.power === 'stopped' && !member.previousInstance,
  );
  // below its buffer the pool waits for the spare keeper, which starts stopped members first
  const takeWarm = warmFree < buffer ? 0 : Math.min(slots, warmOld.length, spare + startable.length);
  plan.surge = startable.slice(0, Math.max(0, takeWarm - spare)).map((member) => member.member);
  // the highest first, as the spare keeper stops its surplus
  plan.rebuild.push(...(takeWarm === 0 ? [] : warmOld.slice(-takeWarm)).map((member) => member.member));
  plan.heldBack = slots > 0 ? warmOld.length - takeWarm : 0;
  return plan;
}
