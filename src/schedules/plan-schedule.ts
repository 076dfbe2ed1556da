import { classifyMemberClaim, isClaimable } from '../claims/claim-liveness.js';
import type { MemberFacts } from '../desktop-backend.js';
import { removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import type { PoolSchedule, SchedulePeriod } from '../pool-schedule.js';
import { nextScheduleChange, periodAt, periodsStartingWithin } from './schedule-clock.js';

/**
 * How long before a period whose buffer is larger the keeper grows the pool and starts its members: 15 minutes,
 * time for clones and boots, so the first logons of the period find desktops running.
 *
 * @category schedules
 */
export const scheduleLeadMs = 15 * 60_000;

/**
 * How long a member must have been free before a scale-down removes it: 10 minutes, so a pool does not shrink and
 * clone again around a lull of a few minutes.
 *
 * @category schedules
 */
export const scheduleSettleMs = 10 * 60_000;

/** What {@link planScheduleTargets} looks at. @category schedules */
export interface ScheduleTargetsInput {
  schedule: PoolSchedule;
  /** What holds outside every period: the pool's plain size and `minReady`. */
  plain: { size: number; minReady: number };
  /** Members a live claim holds now. */
  claimed: number;
  /** Live entries of the pool's waitlist: each one is a claim to come. */
  waiters: number;
  now: Date;
}

/**
 * What a scheduled pool aims at now: the period in force (`undefined` outside every period), the one warmed ahead
 * for, the size and the free running members, and the next change.
 *
 * @category schedules
 */
export interface ScheduleTargets {
  period: string | undefined;
  /** A period starting within {@link scheduleLeadMs} whose larger buffer the pool is warmed for now. */
  warmingFor: string | undefined;
  size: number;
  freeRunning: number;
  nextChange: { at: Date; period: string | undefined } | undefined;
}

/** The free running members a period keeps for `claimed` claimed members. */
function bufferOf(period: SchedulePeriod, claimed: number): number {
  const buffer =
    'count' in period.buffer ? period.buffer.count : Math.ceil((period.buffer.percent * claimed) / 100);
  return period.scaleToZero ? buffer : Math.max(1, buffer);
}

function targetsIn(
  period: SchedulePeriod,
  claimed: number,
  waiters: number,
): { size: number; freeRunning: number } {
  const free = bufferOf(period, claimed) + waiters;
  const size = Math.min(period.max, Math.max(period.min, claimed + free));
  return { size, freeRunning: Math.max(0, Math.min(free, size - claimed)) };
}

/**
 * The targets of a scheduled pool at `now`. In a period: free running members `buffer` (a count, or a percentage
 * of the claimed members rounded up; at least one unless the period may scale to zero) plus one per waiter, and a
 * size of the claimed members plus those, within the period's `min` and `max`. Outside every period: the plain
 * size and `minReady`. Within {@link scheduleLeadMs} of a period that asks for more, the targets are that period's
 * where larger, so its first claims find members running. Pure.
 *
 * @example
 * ```ts
 * const targets = planScheduleTargets({ schedule, plain: { size: 2, minReady: 0 }, claimed: 10, waiters: 0, now });
 * // in "peak" (buffer 30%, min 3, max 20): { period: 'peak', size: 13, freeRunning: 3, … }
 * ```
 * @category schedules
 */
export function planScheduleTargets(input: ScheduleTargetsInput): ScheduleTargets {
  const { schedule, plain, claimed, waiters, now } = input;
  const period = periodAt(schedule, now);
  const current = period
    ? targetsIn(period, claimed, waiters)
    : { size: plain.size, freeRunning: Math.min(plain.minReady, plain.size) };
  let warmingFor: string | undefined;
  let { size, freeRunning } = current;
  for (const upcoming of periodsStartingWithin(schedule, now, scheduleLeadMs)) {
    const ahead = targetsIn(upcoming.period, claimed, waiters);
    if (ahead.freeRunning > freeRunning || ahead.size > size) {
      warmingFor ??= upcoming.period.name;
      size = Math.max(size, ahead.size);
      freeRunning = Math.max(freeRunning, ahead.freeRunning);
    }
  }
  const next = nextScheduleChange(schedule, now);
  return {
    period: period?.name,
    warmingFor,
    size,
    freeRunning,
    nextChange: next && { at: next.at, period: next.period?.name },
  };
}

/** What {@link planScheduleScaling} looks at. @category schedules */
export interface ScheduleScalingInput {
  targets: Pick<ScheduleTargets, 'size' | 'freeRunning'>;
  /** Every member of the pool as its backend reports them. */
  members: readonly MemberFacts[];
  /** The pool's claim Leases as read. */
  leases: readonly LeaseObject[];
  /** When each member was first seen free (`corral.dev/vdi-free-since`); a member without it has not settled. */
  freeSince: ReadonlyMap<string, Date>;
  now: Date;
}

/**
 * How a keeper pass changes a scheduled pool's size:
 *
 * - `grow`: members to clone to reach the target size.
 * - `remove`: free members to remove, free for {@link scheduleSettleMs} at least, stopped ones first, then the
 *   highest index; never a member a claim holds, nor the running free members the target keeps warm.
 * - `waiting`: members the target would remove that have not been free long enough yet.
 * - `markFree` / `unmarkFree`: members to mark free since now, and claimed members whose mark goes.
 *
 * @category schedules
 */
export interface ScheduleScalingPlan {
  grow: number;
  remove: string[];
  waiting: number;
  markFree: string[];
  unmarkFree: string[];
}

/** A member nobody holds and no user's expired claim lies on; a removal's own Lease counts as none. */
export function isUnclaimed(member: MemberFacts, lease: LeaseObject | undefined, now: Date): boolean {
  if (member.deleting) return false;
  if (!isClaimable(classifyMemberClaim({ member, lease, now }))) return false;
  const holder = lease?.spec.holderIdentity;
  return !holder || holder === removalHolder;
}

/**
 * Plans the size change of a scheduled pool from one read. Growth counts every member but those being deleted;
 * scale-down takes only members that are free now and were free a settle time ago by their mark. Pure.
 *
 * @category schedules
 */
export function planScheduleScaling(input: ScheduleScalingInput): ScheduleScalingPlan {
  const { targets, freeSince, now } = input;
  const leaseOf = new Map(input.leases.map((lease) => [lease.metadata.name, lease]));
  const standing = input.members.filter((member) => !member.deleting);
  const free = standing.filter((member) =>
    isUnclaimed(member, leaseOf.get(leaseNameFor(member.member)), now),
  );
  const freeNames = new Set(free.map((member) => member.member));
  const markFree = free.filter((member) => !freeSince.has(member.member)).map((member) => member.member);
  const unmarkFree = standing
    .filter((member) => !freeNames.has(member.member) && freeSince.has(member.member))
    .map((member) => member.member);
  const surplus = Math.max(0, standing.length - targets.size);
  // the warm members the target keeps are no surplus: removing one would only start another
  const kept = new Set(
    free
      .filter((member) => member.power === 'running' || member.power === 'starting')
      .sort((left, right) => compareNatural(left.member, right.member))
      .slice(0, targets.freeRunning)
      .map((member) => member.member),
  );
  const settled = free
    .filter((member) => {
      if (kept.has(member.member)) return false;
      const since = freeSince.get(member.member);
      return since !== undefined && now.getTime() - since.getTime() >= scheduleSettleMs;
    })
    .sort(
      (left, right) =>
        Number(left.power !== 'stopped') - Number(right.power !== 'stopped') ||
        compareNatural(right.member, left.member),
    );
  const remove = settled.slice(0, surplus).map((member) => member.member);
  return {
    grow: Math.max(0, targets.size - standing.length),
    remove,
    waiting: Math.min(surplus, free.length) - remove.length,
    markFree,
    unmarkFree,
  };
}

/**
 * When a pool whose keeper failed `attempts` times in a row, last at `failedAt`, is tried again: 30 s after the
 * first failure, doubling up to 10 minutes, so a pool whose clones keep failing does not retry in a tight loop.
 *
 * @category schedules
 */
export function retryAt(failedAt: Date, attempts: number): Date {
  const delayMs = Math.min(10 * 60_000, 30_000 * 2 ** Math.max(0, attempts - 1));
  return new Date(failedAt.getTime() + delayMs);
}
