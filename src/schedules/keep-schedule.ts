import { z } from 'zod';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { freeSinceAnnotation, leasePoolLabel } from '../keys.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import type { PoolSchedule } from '../pool-schedule.js';
import type { PoolSettings } from '../pool-settings.js';
import { memberFactoryFor } from '../pools/member-factory-for.js';
import { planMemberRemoval } from '../pools/plan-resize.js';
import { readPoolSettingsIn, writePoolSettings } from '../pools/pool-settings-store.js';
import { resizePool } from '../pools/resize-pool.js';
import { carryOutSpares, planFromRead, readSpares, type SparesRead } from '../spares/keep-spares.js';
import { annotateVm } from '../spares/spare-writes.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { splitWaiterLeases } from '../waitlist/plan-waitlist.js';
import { freeSinceOf } from './free-since.js';
import {
  isUnclaimed,
  planScheduleScaling,
  planScheduleTargets,
  retryAt,
  type ScheduleTargets,
} from './plan-schedule.js';

/** The identity a schedule's keeper acts as, in the audit log. @category schedules */
export const scheduleActor = 'corral-vdi/schedule';

/** What one keeper pass did to a scheduled VM pool. @category schedules */
export interface KeepScheduleResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  /** The targets of the pass, with the period in force and the next change. */
  targets: ScheduleTargets;
  /** Members claimed when the pass read the pool. */
  claimed: number;
  waiters: number;
  /** Members cloned, removed, started and stopped by this pass. */
  added: string[];
  removed: string[];
  started: string[];
  stopped: string[];
  /** Members a scale-down waits for: free, but not for the settle time yet. */
  settling: number;
  /** Free running members still missing after the pass (no stopped member to start, or no device room). */
  short: number;
}

const poolSchema = z.object({ name: poolNameSchema, namespace: namespaceSchema.optional() });

/** The members a live claim holds, and the live waiters, from one read. */
export function demandOf(ctx: VdiContext, read: SparesRead): { claimed: number; waiters: number } {
  const now = ctx.clock.now();
  const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name, lease]));
  const claimed = read.members.filter(
    (member) => !member.deleting && !isUnclaimed(member, leaseOf.get(leaseNameFor(member.member)), now),
  ).length;
  const poolLeases = read.leases.filter((lease) => lease.metadata.labels?.[leasePoolLabel] === read.pool);
  return { claimed, waiters: splitWaiterLeases(poolLeases, 'vm', now).live.length };
}

/** Removes free members as a shrink does: each one's Lease first, so a claim that lands meanwhile keeps it. */
async function removeMembers(
  ctx: VdiContext,
  read: SparesRead,
  remove: readonly string[],
): Promise<string[]> {
  const factory = memberFactoryFor(ctx);
  const { namespace, pool } = read;
  const vmOf = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const removed: string[] = [];
  for (const member of remove) {
    const vm = vmOf.get(member);
    const lease = leaseOf.get(leaseNameFor(member));
    if (!vm || planMemberRemoval({ vm, lease, now: ctx.clock.now() }).kind !== 'remove') continue;
    const taken = await takeRemovalLease(ctx, { namespace, pool, member }, lease);
    if (!taken) continue;
    await factory.deleteMember({ namespace, member, uid: vm.metadata.uid ?? '' });
    await deleteLeaseAsRead(ctx, taken);
    removed.push(member);
    ctx.events.emit('pool-progress', {
      poolId: formatPoolId({ kind: 'vm', namespace, pool }),
      member,
      step: 'removed',
      done: removed.length,
      total: remove.length,
    });
  }
  return removed;
}

/**
 * One pass of a scheduled VM pool's keeper, given its settings: read the pool, plan its targets
 * ({@link planScheduleTargets}) and its size change ({@link planScheduleScaling}), mark members free since now,
 * clone up to the target (with a grow's admission), remove members free for the settle time, then start or stop
 * spares to the free running target (the warm spare keeper's plan). Every write is conditional on what it read.
 */
async function keepScheduledPool(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  settings: PoolSettings & { schedule: PoolSchedule },
): Promise<KeepScheduleResult> {
  const read = await readSpares(ctx, namespace, pool);
  const now = ctx.clock.now();
  const { claimed, waiters } = demandOf(ctx, read);
  const targets = planScheduleTargets({
    schedule: settings.schedule,
    plain: { size: settings.plainSize ?? read.members.length, minReady: read.minReady },
    claimed,
    waiters,
    now,
  });
  const freeSince = freeSinceOf(read.vms);
  const scaling = planScheduleScaling({
    targets,
    members: read.members,
    leases: read.leases,
    freeSince,
    now,
  });
  const vmOf = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  for (const member of scaling.markFree) {
    const vm = vmOf.get(member);
    if (vm) await annotateVm(ctx, vm, freeSinceAnnotation, now.toISOString());
  }
  for (const member of scaling.unmarkFree) {
    const vm = vmOf.get(member);
    if (vm) await annotateVm(ctx, vm, freeSinceAnnotation, null);
  }
  const standing = read.members.filter((member) => !member.deleting).length;
  const added =
    scaling.grow > 0
      ? (
          await resizePool(ctx, {
            name: pool,
            namespace,
            size: standing + scaling.grow,
            identity: scheduleActor,
          })
        ).added
      : [];
  const removed = await removeMembers(ctx, read, scaling.remove);
  const after = await readSpares(ctx, namespace, pool);
  const sparesRead = { ...after, minReady: targets.freeRunning };
  const spares = await carryOutSpares(ctx, sparesRead, await planFromRead(ctx, sparesRead));
  const result: KeepScheduleResult = {
    id: formatPoolId({ kind: 'vm', namespace, pool }),
    targets,
    claimed,
    waiters,
    added,
    removed,
    started: spares.started,
    stopped: spares.stopped,
    settling: scaling.waiting,
    short: spares.short,
  };
  if ([added, removed, spares.started, spares.stopped].some((list) => list.length > 0)) {
    ctx.events.emit('pool-scaled', {
      poolId: result.id,
      period: targets.period ?? null,
      size: targets.size,
      freeRunning: targets.freeRunning,
      added,
      removed,
      started: spares.started,
      stopped: spares.stopped,
    });
  }
  return result;
}

/** Options of {@link keepPoolSchedule}. @category schedules */
export interface KeepPoolScheduleOptions {
  name: string;
  namespace?: string;
  /** Run a pass during a backoff too. @defaultValue false */
  force?: boolean;
  /** The pool's settings as already read (a pass over a namespace lists them once). @defaultValue read here */
  settings?: PoolSettings;
}

/** What {@link keepPoolSchedule} did: the pass, or that it waits out a backoff. @category schedules */
export type KeepScheduleOutcome =
  | { kind: 'kept'; result: KeepScheduleResult }
  | { kind: 'backing-off'; id: string; retryAt: string; attempts: number; error: string };

/**
 * One pass of a scheduled VM pool's keeper (see {@link setPoolSchedule}), which the broker runs beside the warm
 * spare keeper on its interval. A failure is recorded on the pool's settings (`scheduleFailure`: when, how many in a
 * row, why) and the pool is left alone until {@link retryAt}, 30 s doubling to 10 minutes; the first pass that
 * succeeds clears the record. With `force`, a pass runs during a backoff too.
 *
 * @example
 * ```ts
 * const outcome = await keepPoolSchedule(vdi.context, { name: 'devpool' });
 * if (outcome.kind === 'kept') console.log(outcome.result.targets);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when the pool has no schedule; the pass's own error
 *   (after recording it), such as `INSUFFICIENT_CAPACITY` or `CLONE_FAILED`.
 * @category schedules
 */
export async function keepPoolSchedule(
  ctx: VdiContext,
  options: KeepPoolScheduleOptions,
): Promise<KeepScheduleOutcome> {
  const parsed = parseOptions(
    poolSchema,
    { name: options.name, namespace: options.namespace },
    'keepPoolSchedule',
  );
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const pool = parsed.name;
  const id = formatPoolId({ kind: 'vm', namespace, pool });
  const settings = options.settings ?? (await readPoolSettingsIn(ctx, namespace)).get(pool) ?? {};
  const { schedule, scheduleFailure: failure } = settings;
  if (!schedule) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `Pool ${id} has no schedule; set one with "corral-vdi pool set ${pool} --schedule-file FILE".`,
      {
        details: { pool, namespace },
      },
    );
  }
  if (failure && !options.force) {
    const failedAt = parseRfc3339(failure.at) ?? ctx.clock.now();
    const next = retryAt(failedAt, failure.attempts);
    if (next.getTime() > ctx.clock.now().getTime()) {
      return {
        kind: 'backing-off',
        id,
        retryAt: next.toISOString(),
        attempts: failure.attempts,
        error: failure.error,
      };
    }
  }
  try {
    const result = await keepScheduledPool(ctx, namespace, pool, { ...settings, schedule });
    if (failure) {
      await writePoolSettings(ctx, namespace, pool, ({ scheduleFailure: _, ...rest }) => rest);
    }
    return { kind: 'kept', result };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const at = ctx.clock.now();
    const attempts = (failure?.attempts ?? 0) + 1;
    await writePoolSettings(ctx, namespace, pool, (stored) => ({
      ...stored,
      scheduleFailure: { at: at.toISOString(), attempts, error: message },
    })).catch(() => undefined);
    ctx.events.emit('pool-schedule-failed', {
      poolId: id,
      error: message,
      attempts,
      retryAt: retryAt(at, attempts).toISOString(),
    });
    throw error;
  }
}
