import { z } from 'zod';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { type RemovalTarget, takeRemovalLease } from '../claims/removal-lease.js';
import { backendFor, type VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import { removalHolder, rollOutAtAnnotation, rollToAnnotation, sourceAnnotation } from '../keys.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import type { PoolRollout } from '../pool-rollout.js';
import { type PoolSettings, poolSettingsOf } from '../pool-settings.js';
import {
  readPoolSettingsConfigMap,
  readPoolSettingsIn,
  writePoolSettings,
} from '../pools/pool-settings-store.js';
import { demandOf } from '../schedules/keep-schedule.js';
import { planScheduleTargets } from '../schedules/plan-schedule.js';
import { claimKeyOf } from '../sessions/claim-key.js';
import { updateClaimLease } from '../sessions/update-claim-lease.js';
import { readSpares, type SparesRead } from '../spares/keep-spares.js';
import { annotateVm, markSpare } from '../spares/spare-writes.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { recreateVmMember } from '../vm/recreate-vm-member.js';
import { cloneNameFor } from '../vm/vm-clone-object.js';
import { planRollout, type RolloutPlan } from './plan-rollout.js';

/** What one roll-out pass did to a pool. @category rollouts */
export interface KeepRolloutResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  /** The golden VM the pool moves to. */
  to: string;
  /** Members on `to` after the pass, of `total`. */
  onTarget: number;
  total: number;
  /** Members this pass rebuilt from `to` (journal entries it finished included). */
  rebuilt: string[];
  /** Members whose rebuild failed, with why; the next pass finishes them. */
  failed: Array<{ member: string; error: string }>;
  /** Stopped members on `to` this pass started, to keep the buffer running while running members were rebuilt. */
  started: string[];
  /** Claimed members still on an older golden VM: rebuilt once released, or reclaimed at the deadline. */
  claimed: string[];
  /** Free running members the buffer kept from a rebuild this pass. */
  heldBack: number;
  paused: boolean;
  /** Whether every member is on `to` now; the roll-out is then recorded as finished. */
  finished: boolean;
}

/** What {@link keepPoolRollout} did: a pass, or nothing because the roll-out finished before. @category rollouts */
export type KeepRolloutOutcome =
  | { kind: 'kept'; result: KeepRolloutResult }
  | { kind: 'finished'; id: string; to: string; finishedAt: string };

/** Options of {@link keepPoolRollout}. @category rollouts */
export interface KeepPoolRolloutOptions {
  name: string;
  namespace?: string;
  /** Called before each write; a broker replica passes its leader fence, so a former leader writes nothing. */
  fence?: () => Promise<void>;
  /** How long one member's clone may take. @defaultValue 120000 */
  cloneTimeoutMs?: number;
}

const poolSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  cloneTimeoutMs: z.int().positive().optional(),
});

// the free running members the pool keeps for claims now: what the keepers aim at
function bufferOf(ctx: VdiContext, settings: PoolSettings, read: SparesRead): number {
  if (!settings.schedule) return read.minReady;
  const { claimed, waiters } = demandOf(ctx, read);
  return planScheduleTargets({
    schedule: settings.schedule,
    plain: { size: settings.plainSize ?? read.members.length, minReady: read.minReady },
    claimed,
    waiters,
    now: ctx.clock.now(),
  }).freeRunning;
}

/** Adds a member to the roll-out's journal, or takes it off, in one settings write. */
async function journal(ctx: VdiContext, target: RemovalTarget, add: boolean): Promise<void> {
  await writePoolSettings(ctx, target.namespace, target.pool, (stored) => {
    const { rollOut } = stored;
    if (!rollOut) return stored;
    const others = rollOut.rebuilding.filter((member) => member !== target.member);
    return { ...stored, rollOut: { ...rollOut, rebuilding: add ? [...others, target.member] : others } };
  });
}

interface RebuildContext {
  ctx: VdiContext;
  rollout: PoolRollout;
  ephemeral: boolean;
  timeoutMs: number | undefined;
  fence: (() => Promise<void>) | undefined;
}

/**
 * Rebuilds one free member from the new golden VM: its journal entry first, then its claim Lease (as a removal, so
 * no claim takes it meanwhile, conditional on the Lease read), then the member made again under its name.
 * The journal entry and the Lease go once the clone succeeded; a failure leaves both for the next pass.
 *
 * @returns `false` when a claim took the member first.
 */
async function rebuild(run: RebuildContext, target: RemovalTarget, read: LeaseObject | undefined) {
  const { ctx, rollout } = run;
  await run.fence?.();
  // the journal first: a keeper that stops after taking the Lease leaves the member where the next one looks
  await journal(ctx, target, true);
  const taken = await takeRemovalLease(ctx, target, read);
  if (!taken) {
    await journal(ctx, target, false);
    return false;
  }
  await recreateVmMember(ctx, target, {
    from: { golden: rollout.to, ephemeral: run.ephemeral },
    timeoutMs: run.timeoutMs,
  });
  await deleteLeaseAsRead(ctx, taken);
  await journal(ctx, target, false);
  return true;
}

/**
 * Finishes a rebuild the journal records as under way, from where the keeper that began it stopped: a member
 * already made from the new golden VM (its clone done) is only cleared away, any other is made again, waiting for
 * a clone under way. A member a user claimed meanwhile (the removal's Lease ran out) is left to its release.
 *
 * @returns `false` when it was left.
 */
async function resume(run: RebuildContext, target: RemovalTarget) {
  const { ctx, rollout } = run;
  const { namespace, member } = target;
  const [vm, clone, lease] = await Promise.all([
    ctx.cluster.getVm(namespace, member),
    ctx.cluster.getClone(namespace, cloneNameFor(member)),
    ctx.cluster.getLease(namespace, leaseNameFor(member)),
  ]);
  await run.fence?.();
  const holder = lease?.spec.holderIdentity;
  const made =
    vm !== undefined &&
    !vm.metadata.deletionTimestamp &&
    vm.metadata.annotations?.[sourceAnnotation] === rollout.to &&
    (clone === undefined || clone.status?.phase === 'Succeeded');
  if (made) {
    if (clone)
      await ctx.cluster
        .resource(cloneKind)
        .in(namespace)
        .delete(clone.metadata.name ?? '', { preconditions: {} });
    if (lease && holder === removalHolder) await deleteLeaseAsRead(ctx, lease);
  } else {
    const taken = await takeRemovalLease(ctx, target, lease);
    if (!taken) {
      await journal(ctx, target, false);
      return false;
    }
    await recreateVmMember(ctx, target, {
      from: { golden: rollout.to, ephemeral: run.ephemeral },
      timeoutMs: run.timeoutMs,
    });
    await deleteLeaseAsRead(ctx, taken);
  }
  await journal(ctx, target, false);
  return true;
}

/** Marks the claimed members still on an older golden VM: the golden VM to make them from, and the deadline. */
async function markClaimed(
  run: RebuildContext,
  read: SparesRead,
  plan: RolloutPlan,
  deadline: string | undefined,
): Promise<void> {
  const { ctx, rollout } = run;
  const vmOf = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  for (const member of plan.markRollTo) {
    const vm = vmOf.get(member);
    await run.fence?.();
    if (vm) await annotateVm(ctx, vm, rollToAnnotation, rollout.to);
  }
  if (deadline === undefined) return;
  for (const member of plan.markDeadline) {
    const lease = leaseOf.get(leaseNameFor(member));
    if (!lease) continue;
    await run.fence?.();
    // a claim that ended or changed since the read is no longer this one's to mark
    await updateClaimLease(
      ctx,
      { namespace: read.namespace, name: lease.metadata.name ?? '', claim: claimKeyOf(lease), known: lease },
      (current) => {
        if (current.metadata.annotations?.[rollOutAtAnnotation] === deadline) return undefined;
        const annotations = { ...current.metadata.annotations, [rollOutAtAnnotation]: deadline };
        return { ...current, metadata: { ...current.metadata, annotations } };
      },
    );
  }
}

/**
 * One pass of a pool's roll-out (see `startPoolRollout`): read the pool, plan it ({@link planRollout}), mark the
 * claimed members still on an older golden VM (so an ephemeral release makes them from the new one, and their
 * holders are warned of the deadline), start members already rebuilt where running ones are to go, then finish the
 * rebuilds under way and rebuild free members, at most `maxUnavailable` at once. The broker's leader runs it on
 * its keeper interval; once every member is on the new golden VM the roll-out is recorded as finished.
 *
 * @example
 * ```ts
 * const outcome = await keepPoolRollout(vdi.context, { name: 'devpool' });
 * if (outcome.kind === 'kept') console.log(`${outcome.result.onTarget}/${outcome.result.total} on ${outcome.result.to}`);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when the pool has no roll-out; `NOT_LEADER` from the
 *   fence. A member's failed rebuild is in `failed`, not thrown.
 * @category rollouts
 */
export async function keepPoolRollout(
  ctx: VdiContext,
  options: KeepPoolRolloutOptions,
): Promise<KeepRolloutOutcome> {
  const parsed = parseOptions(
    poolSchema,
    { name: options.name, namespace: options.namespace, cloneTimeoutMs: options.cloneTimeoutMs },
    'keepPoolRollout',
  );
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const pool = parsed.name;
  const id = formatPoolId({ kind: 'vm', namespace, pool });
  // read fresh, not from a cache: the journal must hold every rebuild the last pass began
  const settings = poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, pool));
  const rollout = settings.rollOut;
  if (!rollout) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `Pool ${id} has no roll-out; start one with "corral-vdi pool set ${pool} --from GOLDEN".`,
      { details: { pool, namespace } },
    );
  }
  if (rollout.finishedAt) return { kind: 'finished', id, to: rollout.to, finishedAt: rollout.finishedAt };
  const read = await readSpares(ctx, namespace, pool);
  const rollTo = new Map(
    read.vms.flatMap((vm) => {
      const value = vm.metadata.annotations?.[rollToAnnotation];
      return value === undefined ? [] : [[vm.metadata.name ?? '', value] as const];
    }),
  );
  const plan = planRollout({
    rollout,
    members: read.members,
    leases: read.leases,
    buffer: bufferOf(ctx, settings, read),
    rollTo,
    now: ctx.clock.now(),
  });
  const run: RebuildContext = {
    ctx,
    rollout,
    ephemeral: read.members.some((member) => member.ephemeral),
    timeoutMs: parsed.cloneTimeoutMs,
    fence: options.fence,
  };
  await markClaimed(run, read, plan, rollout.deadline);
  const result: KeepRolloutResult = {
    id,
    to: rollout.to,
    onTarget: plan.onTarget.length,
    total: plan.total,
    rebuilt: [],
    failed: [],
    started: [],
    claimed: plan.claimed,
    heldBack: plan.heldBack,
    paused: rollout.paused ?? false,
    finished: false,
  };
  const vmOf = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  const backend = backendFor(ctx, 'vm');
  for (const member of plan.surge) {
    const vm = vmOf.get(member);
    await run.fence?.();
    if (!vm || !(await markSpare(ctx, vm, ctx.clock.now().toISOString()))) continue;
    await backend.startMember({ namespace, member });
    result.started.push(member);
  }
  const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const work = [
    ...plan.resume.map((member) => ({ member, resumed: true })),
    ...plan.rebuild.map((member) => ({ member, resumed: false })),
  ];
  await forEachBounded(work, Math.max(1, rollout.maxUnavailable), async ({ member, resumed }) => {
    const target = { namespace, pool, member };
    ctx.events.emit('pool-rollout', {
      poolId: id,
      to: rollout.to,
      member,
      step: 'rebuilding',
      onTarget: result.onTarget,
      total: result.total,
    });
    try {
      const done = resumed
        ? await resume(run, target)
        : await rebuild(run, target, leaseOf.get(leaseNameFor(member)));
      if (!done) return;
      result.rebuilt.push(member);
      result.onTarget += 1;
      ctx.events.emit('pool-rollout', {
        poolId: id,
        to: rollout.to,
        member,
        step: 'rebuilt',
        onTarget: result.onTarget,
        total: result.total,
      });
    } catch (error) {
      // a former leader stops here, as a crash would: the new leader finishes from the journal
      if (isVdiError(error, 'NOT_LEADER')) throw error;
      const message = error instanceof Error ? error.message : String(error);
      result.failed.push({ member, error: message });
      ctx.events.emit('pool-rollout', {
        poolId: id,
        to: rollout.to,
        member,
        step: 'failed',
        onTarget: result.onTarget,
        total: result.total,
        error: message,
      });
    }
  });
  result.finished = result.failed.length === 0 && result.onTarget >= result.total && !rollout.paused;
  if (result.finished) {
    const finishedAt = ctx.clock.now().toISOString();
    await run.fence?.();
    await writePoolSettings(ctx, namespace, pool, (stored) =>
      stored.rollOut?.to === rollout.to && stored.rollOut.startedAt === rollout.startedAt
        ? { ...stored, rollOut: { ...stored.rollOut, rebuilding: [], finishedAt } }
        : stored,
    );
    ctx.events.emit('pool-rolled-out', { poolId: id, to: rollout.to, total: result.total });
  }
  return { kind: 'kept', result };
}

/** What a roll-out pass over a namespace did. @category rollouts */
export interface KeepRolloutsPassResult {
  /** Each pool's pass with a roll-out under way. */
  kept: KeepRolloutResult[];
  /** Each pool whose pass failed, with why; the next pass tries again. */
  failed: Array<{ id: string; error: string }>;
}

/**
 * One pass over every VM pool of a namespace with a roll-out under way (see {@link keepPoolRollout}). A pool whose
 * pass fails is reported in `failed`, and the others go on; `NOT_LEADER` from the fence ends the whole pass.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for a bad namespace; `NOT_LEADER`; what listing the settings throws.
 * @category rollouts
 */
export async function keepRollouts(
  ctx: VdiContext,
  options: { namespace?: string; fence?: () => Promise<void> } = {},
): Promise<KeepRolloutsPassResult> {
  const parsed = parseOptions(
    z.object({ namespace: namespaceSchema.optional() }),
    {
      namespace: options.namespace,
    },
    'keepRollouts',
  );
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const settings = await readPoolSettingsIn(ctx, namespace, { cached: ctx.cluster.isCaching(namespace) });
  const result: KeepRolloutsPassResult = { kept: [], failed: [] };
  for (const [pool, own] of [...settings].sort(([left], [right]) => left.localeCompare(right))) {
    if (!own.rollOut || own.rollOut.finishedAt) continue;
    try {
      const outcome = await keepPoolRollout(ctx, {
        name: pool,
        namespace,
        ...(options.fence ? { fence: options.fence } : {}),
      });
      if (outcome.kind === 'kept') result.kept.push(outcome.result);
    } catch (error) {
      if (isVdiError(error, 'NOT_LEADER')) throw error;
      result.failed.push({
        id: formatPoolId({ kind: 'vm', namespace, pool }),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return result;
}
