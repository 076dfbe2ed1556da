import type { DesktopKind, MemberFacts } from '../desktop-backend.js';
import { leasePoolLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { PoolSettings } from '../pool-settings.js';
import { describeRollout, type RolloutStatus } from '../rollouts/describe-rollout.js';
import { describeSchedule, type ScheduleStatus } from '../schedules/describe-schedule.js';
import { splitWaiterLeases } from '../waitlist/plan-waitlist.js';

/** Where a pool's schedule and roll-out stand, each `undefined` when the pool has none. @category spares */
export interface PoolPlans {
  /** Live entries of the pool's waitlist. */
  waiters: number;
  schedule: ScheduleStatus | undefined;
  rollOut: RolloutStatus | undefined;
}

/** One pool as read, for {@link describePoolPlans}: what a pool kind's `readPoolFacts` answers. @category spares */
export interface PoolPlansFacts {
  members: readonly MemberFacts[];
  /** The pool's Leases, or the namespace's. */
  leases: readonly LeaseObject[];
  minReady: number | undefined;
  freeSince?: ReadonlyMap<string, Date> | undefined;
  /** The fewest members a scheduled pool of the kind keeps. @defaultValue 1 */
  fewestMembers?: number | undefined;
  /** Whether a roll-out counts a member warm only once Ready (a container pool's Pods). @defaultValue false */
  warmWhenReady?: boolean | undefined;
  settings: PoolSettings | undefined;
}

/**
 * Describes a pool's schedule and roll-out from one read of it: the waiters are the live waiter Leases labelled
 * with this pool (the Leases read may be the whole namespace's), and a roll-out's buffer is the schedule's free
 * running target now, else the pool's `minReady`. Pure.
 *
 * @category spares
 */
export function describePoolPlans(input: {
  kind: DesktopKind;
  pool: string;
  facts: PoolPlansFacts;
  now: Date;
}): PoolPlans {
  const { kind, pool, facts, now } = input;
  const { settings, members, leases } = facts;
  const poolLeases = leases.filter((lease) => lease.metadata.labels?.[leasePoolLabel] === pool);
  const waiters = splitWaiterLeases(poolLeases, kind, now).live.length;
  const schedule = settings?.schedule
    ? describeSchedule({
        settings: { ...settings, schedule: settings.schedule },
        members,
        leases,
        freeSince: facts.freeSince ?? new Map(),
        minReady: facts.minReady ?? 0,
        waiters,
        fewestMembers: facts.fewestMembers ?? 1,
        now,
      })
    : undefined;
  const rollout = settings?.rollOut;
  return {
    waiters,
    schedule,
    rollOut: rollout
      ? describeRollout({
          rollout,
          members,
          leases,
          buffer: schedule?.targets.freeRunning ?? facts.minReady ?? 0,
          now,
          readyOnly: facts.warmWhenReady,
        })
      : undefined,
  };
}
