import type { MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import type { PoolSchedule } from '../pool-schedule.js';
import type { PoolSettings } from '../pool-settings.js';
import { isUnclaimed, planScheduleScaling, planScheduleTargets, retryAt } from './plan-schedule.js';
import { periodAt } from './schedule-clock.js';

/** A scheduled pool as `pool status` shows it: where the schedule stands and what is under way. @category schedules */
export interface ScheduleStatus {
  timeZone: string;
  /** The period in force, `null` outside every period (the plain size and `minReady` hold). */
  period: string | null;
  /** A period starting within the lead time that the pool is warmed for now. */
  warmingFor: string | null;
  /** The next change: when (RFC 3339) and the period from then on (`null`: outside every period). */
  nextChange: { at: string; period: string | null } | null;
  /** What the keeper aims at now. */
  targets: { size: number; freeRunning: number };
  /** Whether the period in force lets the free running members go down to none; `false` outside every period. */
  scaleToZero: boolean;
  /** The size outside every period. */
  plainSize: number;
  periods: PoolSchedule['periods'];
  /** What the keeper's passes are doing: members to clone, starting, stopping, being removed, settling. */
  underway: { cloning: number; starting: number; stopping: number; removing: number; settling: number };
  /** The keeper's failures in a row and when it tries again, or `null`. */
  failure: { at: string; attempts: number; error: string; retryAt: string } | null;
}

/** What {@link describeSchedule} reads. @category schedules */
export interface ScheduleStatusInput {
  settings: PoolSettings & { schedule: PoolSchedule };
  members: readonly MemberFacts[];
  leases: readonly LeaseObject[];
  /** Of the pool's members, when each was first seen free (`corral.dev/vdi-free-since`). */
  freeSince: ReadonlyMap<string, Date>;
  minReady: number;
  waiters: number;
  /** The fewest members the pool's kind keeps: 1 for a VM pool, whose members are the pool; 0 for a container pool. */
  fewestMembers: number;
  now: Date;
}

/**
 * Describes where a scheduled pool stands: the period now, the next change, the keeper's targets, and the work under
 * way toward them. Pure.
 *
 * @category schedules
 */
export function describeSchedule(input: ScheduleStatusInput): ScheduleStatus {
  const { settings, members, leases, now } = input;
  const standing = members.filter((member) => !member.deleting);
  const leaseOf = new Map(leases.map((lease) => [lease.metadata.name, lease]));
  const claimed = standing.filter(
    (member) => !isUnclaimed(member, leaseOf.get(leaseNameFor(member.member)), now),
  ).length;
  const plainSize = settings.plainSize ?? standing.length;
  const targets = planScheduleTargets({
    schedule: settings.schedule,
    plain: { size: plainSize, minReady: input.minReady },
    claimed,
    waiters: input.waiters,
    now,
  });
  const size = Math.max(input.fewestMembers, targets.size);
  const scaling = planScheduleScaling({
    targets: { size, freeRunning: targets.freeRunning },
    members,
    leases,
    freeSince: input.freeSince,
    now,
  });
  const failure = settings.scheduleFailure;
  const failedAt = failure && parseRfc3339(failure.at);
  return {
    timeZone: settings.schedule.timeZone,
    period: targets.period ?? null,
    warmingFor: targets.warmingFor ?? null,
    nextChange: targets.nextChange
      ? { at: targets.nextChange.at.toISOString(), period: targets.nextChange.period ?? null }
      : null,
    targets: { size, freeRunning: targets.freeRunning },
    scaleToZero: periodAt(settings.schedule, now)?.scaleToZero ?? false,
    plainSize,
    periods: settings.schedule.periods,
    underway: {
      cloning: scaling.grow,
      starting: members.filter((member) => member.power === 'starting').length,
      stopping: members.filter((member) => member.power === 'stopping').length,
      removing: members.filter((member) => member.deleting).length,
      settling: scaling.waiting + scaling.remove.length,
    },
    failure:
      failure && failedAt ? { ...failure, retryAt: retryAt(failedAt, failure.attempts).toISOString() } : null,
  };
}
