import { type AdmissionPlan, admitPool } from '../capacity/admit-pool.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import {
  ctMemberLabel,
  kindLabel,
  rolloutKey,
  scheduleFailureKey,
  specConfigMapName,
} from '../ct/ct-keys.js';
import { toCtMemberFacts } from '../ct/ct-member-facts.js';
import {
  type CtMemberTarget,
  createMemberPod,
  deleteMemberObjects,
  deletePodAndWait,
  ensureHomeClaim,
  ensureService,
} from '../ct/ct-member-writes.js';
import { type CtPoolSpec, extendedResourcesOf } from '../ct/ct-pool-spec.js';
import {
  ctRolloutOf,
  requireCtPool,
  type StoredCtPool,
  specOf,
  updateCtPoolConfigMap,
} from '../ct/ct-pool-store.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { freeSinceAnnotation, leasePoolLabel, poolLabel } from '../keys.js';
import { nodeKind, podKind, pvcKind, serviceKind } from '../kube/resource-kinds.js';
import type { ConfigMapObject, LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import { defaultMaxUnavailable, type PoolRollout } from '../pool-rollout.js';
import { readScheduleFailure, type ScheduleFailure } from '../pool-settings.js';
import { freeSinceOf } from '../schedules/free-since.js';
import { retryAt } from '../schedules/plan-schedule.js';
import { validateNamespace, validatePoolName } from '../validate.js';
import { toCtAdmissionInput } from './ct-admission.js';
import {
  type CtMemberRead,
  type CtReconcilePlan,
  type CtSchedulePlan,
  planCtReconcile,
} from './plan-ct-reconcile.js';

/** Options of {@link reconcileCtPool}. @category ct-pools */
export interface ReconcileCtPoolOptions {
  /** The pool's name. */
  name: string;
  /** Defaults to the SDK's namespace. */
  namespace?: string;
  /** How long deleting a finished Pod before it is made again may take. @defaultValue 120000 */
  timeoutMs?: number;
  /** Run a scheduled pool's pass during its backoff too. @defaultValue false */
  force?: boolean;
}

/** What one reconcile pass did. @category ct-pools */
export interface ReconcileCtPoolResult {
  /** `ct/<namespace>/<pool>`. */
  id: string;
  /** New members made. */
  created: string[];
  /** Members whose missing Pod, Service or home claim was made. */
  completed: string[];
  /** Free members whose Pod was made again from the image (it had finished, or ran an older image). */
  replaced: string[];
  /** Free members removed because the pool is smaller now. */
  removed: string[];
  /** Members a claim holds, left alone. */
  held: string[];
  /** The capacity admission of the new Pods, when the spec asks for extended resources. */
  capacity?: AdmissionPlan;
  /** For a pool with a schedule: the targets the pass followed, the demand and the members settling. */
  schedule?: CtSchedulePlan;
  /**
   * For a pool with a schedule whose passes failed: the pass did nothing and waits until `retryAt` (30 s after the
   * first failure, doubling up to 10 minutes).
   */
  backingOff?: ScheduleFailure & { retryAt: string };
  /** The pool's image roll-out, when it has had one: where it stands after the pass's plan. */
  rollOut?: CtRolloutResult;
}

/** A container pool's image roll-out as a reconcile pass leaves it. @category ct-pools */
export interface CtRolloutResult {
  /** The image the members move to. */
  to: string;
  /** Members whose Pod runs `to` and is Ready (or is claimed on it), of `total`: `3/10 on <image>`. */
  onTarget: number;
  total: number;
  /** Members being replaced now, and extra members starting. */
  rebuilding: string[];
  paused: boolean;
  finished: boolean;
}

const defaultTimeoutMs = 120_000;

/**
 * The pool's member objects and Leases, and the names the namespace's Pods and Services take. A quiet read takes
 * the Leases from this process's synced cache and leaves the names out: it only tells whether there is anything to do.
 */
async function readMembers(ctx: VdiContext, namespace: string, pool: string, how: { quiet: boolean }) {
  const selector = `${kindLabel}=ct,${poolLabel}=${pool}`;
  const [pods, services, claims, leases, allPods, allServices] = await Promise.all([
    ctx.cluster.resource(podKind).in(namespace).list(selector),
    ctx.cluster.resource(serviceKind).in(namespace).list(selector),
    ctx.cluster.resource(pvcKind).in(namespace).list(selector),
    ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`, { cached: how.quiet }),
    how.quiet ? [] : ctx.cluster.resource(podKind).in(namespace).list(),
    how.quiet ? [] : ctx.cluster.resource(serviceKind).in(namespace).list(),
  ]);
  const memberOf = (labels: Record<string, string> | undefined) => labels?.[ctMemberLabel] ?? '';
  const names = new Set(
    [...pods, ...services, ...claims].map((object) => memberOf(object.metadata.labels)).filter(Boolean),
  );
  const members: CtMemberRead[] = [...names].map((member) => {
    const pod = pods.find((candidate) => candidate.metadata.name === member);
    return {
      member,
      pod: pod && toCtMemberFacts(pod),
      service: services.some((service) => service.metadata.name === member),
      homeClaim: claims.some(
        (claim) => memberOf(claim.metadata.labels) === member && !claim.metadata.deletionTimestamp,
      ),
    };
  });
  const taken = new Set([...allPods, ...allServices].map((object) => object.metadata.name ?? ''));
  return { members, leases, taken, freeSince: freeSinceOf(pods) };
}

async function admit(
  ctx: VdiContext,
  stored: StoredCtPool,
  namespace: string,
  newPods: number,
): Promise<AdmissionPlan | undefined> {
  if (newPods === 0 || Object.keys(extendedResourcesOf(stored.spec)).length === 0) return undefined;
  const [nodes, pods, vmis] = await Promise.all([
    ctx.cluster.resource(nodeKind).list(),
    ctx.cluster.resource(podKind).list(),
    ctx.cluster.listVmis(),
  ]);
  const plan = admitPool(toCtAdmissionInput({ spec: stored.spec, size: newPods, nodes, pods, vmis }));
  if (plan.kind === 'admit') return plan;
  throw new VdiError('INSUFFICIENT_CAPACITY', plan.message, {
    details: {
      pool: stored.spec.name,
      namespace,
      size: plan.size,
      fits: plan.fits,
      shortfall: plan.shortfall,
      reason: plan.reason,
      needs: plan.needs,
      unscheduled: plan.unscheduled,
      table: plan.table,
    },
  });
}

/**
 * The roll-out a pass follows: the one stored while it moves to the spec's image, else a new one when a member runs
 * another image (an apply changed it) or the journal still names members; `undefined` when there is nothing to roll.
 */
function rolloutFor(
  ctx: VdiContext,
  stored: StoredCtPool,
  members: readonly CtMemberRead[],
): PoolRollout | undefined {
  const { spec } = stored;
  const current = ctRolloutOf(stored);
  if (current?.to === spec.image && !current.finishedAt) return current;
  const behind = members.some((read) => read.pod && !read.pod.deleting && read.pod.source !== spec.image);
  // one to an image nothing runs (the image changed back) gives way to one to the spec's, which the pass finishes
  const toSpecImage = current === undefined || current.to === spec.image;
  if (!behind && !current?.rebuilding.length && toSpecImage) return current;
  return {
    to: spec.image,
    maxUnavailable: spec.maxUnavailable ?? defaultMaxUnavailable,
    startedAt: ctx.clock.now().toISOString(),
    // replacements a former roll-out began are finished from the new image
    rebuilding: current?.rebuilding ?? [],
  };
}

/** The plan of a pass over the members as read, for the spec, and the roll-out record it leaves (if any). */
function planPass(ctx: VdiContext, stored: StoredCtPool, read: Awaited<ReturnType<typeof readMembers>>) {
  const { spec } = stored;
  const { freeSince, ...members } = read;
  const rollout = rolloutFor(ctx, stored, read.members);
  const plan = planCtReconcile({
    pool: spec.name,
    size: spec.size,
    home: spec.home !== undefined,
    ...members,
    now: ctx.clock.now(),
    schedule: spec.schedule && { schedule: spec.schedule, minReady: spec.minReady ?? 0, freeSince },
    minReady: spec.minReady,
    rollout: rollout?.finishedAt ? undefined : rollout,
  });
  const record = rollout && rolloutRecord(ctx, rollout, plan);
  const recordChanged =
    record !== undefined && stored.configMap.data?.[rolloutKey] !== JSON.stringify(record);
  return { plan, record, recordChanged };
}

/** The roll-out as the pass leaves it: its journal, and finished once every member runs the image Ready. */
function rolloutRecord(ctx: VdiContext, rollout: PoolRollout, plan: CtReconcilePlan): PoolRollout {
  const pass = plan.rollout;
  if (!pass) return rollout;
  const { finishedAt: _, ...under } = rollout;
  const done = pass.plan.done && pass.journal.length === 0;
  return {
    ...under,
    rebuilding: pass.journal,
    ...(done ? { finishedAt: ctx.clock.now().toISOString() } : {}),
  };
}

/** Writes the roll-out record beside the spec, keeping a spec applied meanwhile. */
async function writeRollout(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  record: PoolRollout,
): Promise<void> {
  await updateCtPoolConfigMap(ctx, namespace, pool, (current) => {
    // a pause or resume written since the read stands
    const stored = ctRolloutOf({ spec: specOf(current), configMap: current });
    const { paused: _, ...rest } = record;
    const next = stored?.to === record.to && stored.paused ? { ...record, paused: true } : rest;
    return { ...current, data: { ...current.data, [rolloutKey]: JSON.stringify(next) } };
  });
}

function emptyResult(namespace: string, pool: string): ReconcileCtPoolResult {
  return {
    id: formatPoolId({ kind: 'ct', namespace, pool }),
    created: [],
    completed: [],
    replaced: [],
    removed: [],
    held: [],
  };
}

/** A scheduled pool's failures in a row, when they hold its passes back now. */
function backoffOf(
  ctx: VdiContext,
  spec: CtPoolSpec,
  configMap: ConfigMapObject,
): (ScheduleFailure & { retryAt: string }) | undefined {
  const failure = spec.schedule && readScheduleFailure(configMap.data?.[scheduleFailureKey]);
  if (!failure) return undefined;
  const next = retryAt(parseRfc3339(failure.at) ?? ctx.clock.now(), failure.attempts);
  return next.getTime() > ctx.clock.now().getTime() ? { ...failure, retryAt: next.toISOString() } : undefined;
}

/** Writes or clears (`undefined`) a scheduled pool's failure record beside its spec, keeping a spec applied meanwhile. */
async function writeScheduleFailure(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  failure: (current: ScheduleFailure | undefined) => ScheduleFailure | undefined,
): Promise<void> {
  await updateCtPoolConfigMap(ctx, namespace, pool, (current) => {
    const { [scheduleFailureKey]: previous, ...data } = current.data ?? {};
    const next = failure(readScheduleFailure(previous));
    if (next === undefined && previous === undefined) return undefined;
    return { ...current, data: next ? { ...data, [scheduleFailureKey]: JSON.stringify(next) } : data };
  });
}

/**
 * One reconcile pass of a container pool: reads its spec and members, asks {@link planCtReconcile}, admits the
 * new Pods' extended resources, and carries the plan out. Removals go first, then each new member's home claim,
 * Service and Pod, in that order: a pass that dies half-way leaves objects labelled with the member, and the
 * next pass completes them. A replace or a removal takes the member's Lease (holder `corral-vdi/resize`) before
 * it deletes anything, so a claim landing meanwhile keeps its member, and deletes the Lease after.
 *
 * A pool whose spec has a `schedule` is sized by the period's targets (`result.schedule`), marks its members' Pods
 * free since the pass that first sees them free, and removes only those free for the settle time. Its failed pass
 * is recorded beside the spec and emits `pool-schedule-failed`; the passes after it do nothing until the backoff
 * ends (`result.backingOff`), unless `force`.
 *
 * @example
 * ```ts
 * const result = await reconcileCtPool(vdi.context, { name: 'devbox' });
 * console.log(result.created, result.removed, result.schedule?.targets.period);
 * ```
 * @throws {@link VdiError} `POOL_NOT_FOUND`; `INVALID_INPUT` when the stored spec is no longer valid;
 *   `INSUFFICIENT_CAPACITY` (nothing written) when the new Pods' extended resources do not fit.
 * @category ct-pools
 */
export async function reconcileCtPool(
  ctx: VdiContext,
  options: ReconcileCtPoolOptions,
): Promise<ReconcileCtPoolResult> {
  const namespace = validateNamespace(options.namespace ?? ctx.defaultNamespace);
  validatePoolName(options.name);
  const quiet = await passWithNothingToDo(ctx, namespace, options.name, options.force ?? false);
  if (quiet) return quiet;
  const stored = await requireCtPool(ctx, namespace, options.name);
  const { spec } = stored;
  const backingOff = options.force ? undefined : backoffOf(ctx, spec, stored.configMap);
  if (backingOff) return { ...emptyResult(namespace, spec.name), backingOff };
  const failure = spec.schedule && readScheduleFailure(stored.configMap.data?.[scheduleFailureKey]);
  try {
    const result = await reconcileAsRead(ctx, namespace, stored, options.timeoutMs);
    if (failure) await writeScheduleFailure(ctx, namespace, spec.name, () => undefined);
    return result;
  } catch (error) {
    // only a scheduled pool backs off: a plain pool's next pass tries again, as it always did
    if (spec.schedule) await recordFailure(ctx, namespace, spec.name, error);
    throw error;
  }
}

async function reconcileAsRead(
  ctx: VdiContext,
  namespace: string,
  stored: StoredCtPool,
  timeoutMs: number | undefined,
): Promise<ReconcileCtPoolResult> {
  const { spec } = stored;
  const read = await readMembers(ctx, namespace, spec.name, { quiet: false });
  const { plan, record, recordChanged } = planPass(ctx, stored, read);
  const capacity = await admit(ctx, stored, namespace, plan.newPods);
  const result: ReconcileCtPoolResult = {
    ...emptyResult(namespace, spec.name),
    ...(capacity ? { capacity } : {}),
    ...(plan.schedule ? { schedule: plan.schedule } : {}),
    ...(record ? { rollOut: rolloutResult(record, plan) } : {}),
  };
  // the journal first: a pass that stops after taking a member leaves it where the next one looks
  if (record && recordChanged) await writeRollout(ctx, namespace, spec.name, record);
  if (record && plan.rollout) reportRollout(ctx, result.id, record, plan.rollout);
  await carryOut(ctx, { namespace, stored, plan, leases: read.leases, result }, timeoutMs);
  const { schedule } = plan;
  if (schedule && result.created.length + result.removed.length > 0) {
    ctx.events.emit('pool-scaled', {
      poolId: result.id,
      period: schedule.targets.period ?? null,
      size: schedule.targets.size,
      freeRunning: schedule.targets.freeRunning,
      added: result.created,
      removed: result.removed,
      started: [],
      stopped: [],
    });
  }
  return result;
}

/** Records a scheduled pool's failed pass, so the next ones back off, and reports it. */
async function recordFailure(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  error: unknown,
): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  const at = ctx.clock.now();
  let attempts = 1;
  await writeScheduleFailure(ctx, namespace, pool, (previous) => {
    attempts = (previous?.attempts ?? 0) + 1;
    return { at: at.toISOString(), attempts, error: message };
  }).catch(() => undefined);
  ctx.events.emit('pool-schedule-failed', {
    poolId: formatPoolId({ kind: 'ct', namespace, pool }),
    error: message,
    attempts,
    retryAt: retryAt(at, attempts).toISOString(),
  });
}

/**
 * With this process's caches of the namespace synced, a pass planned from the cached spec and Leases and one read of
 * the pool's Pods, Services and home claims; its result when that plan leaves every member as it is, else
 * `undefined`, and the pass reads everything fresh and plans again before it writes anything.
 */
async function passWithNothingToDo(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  force: boolean,
): Promise<ReconcileCtPoolResult | undefined> {
  const caches = ctx.cluster.cachesOf(namespace);
  if (!caches?.configMaps.isSynced() || !caches.leases.isSynced()) return undefined;
  const configMap = caches.configMaps.get(specConfigMapName(pool));
  if (configMap?.metadata.labels?.[kindLabel] !== 'ct') return undefined;
  let spec: CtPoolSpec;
  try {
    spec = specOf(configMap);
  } catch {
    // the fresh read tells what is wrong with it
    return undefined;
  }
  const backingOff = force ? undefined : backoffOf(ctx, spec, configMap);
  if (backingOff) return { ...emptyResult(namespace, spec.name), backingOff };
  const read = await readMembers(ctx, namespace, spec.name, { quiet: true });
  const { plan, record, recordChanged } = planPass(ctx, { spec, configMap }, read);
  if (recordChanged || !plan.steps.every((step) => step.kind === 'skip')) return undefined;
  // a failure record is cleared by a pass that writes; a quiet one leaves it to that pass
  if (spec.schedule && readScheduleFailure(configMap.data?.[scheduleFailureKey])) return undefined;
  return {
    ...emptyResult(namespace, spec.name),
    held: plan.steps.filter((step) => step.reason === 'claimed').map((step) => step.member),
    ...(plan.schedule ? { schedule: plan.schedule } : {}),
    ...(record ? { rollOut: rolloutResult(record, plan) } : {}),
  };
}

function rolloutResult(record: PoolRollout, plan: CtReconcilePlan): CtRolloutResult {
  const pass = plan.rollout?.plan;
  return {
    to: record.to,
    onTarget: pass?.onTarget.length ?? 0,
    total: pass?.total ?? 0,
    rebuilding: record.rebuilding,
    paused: record.paused ?? false,
    finished: record.finishedAt !== undefined,
  };
}

/** Emits the pass's roll-out events: each member settled on the image, each begun, and the roll-out's end. */
function reportRollout(
  ctx: VdiContext,
  poolId: string,
  record: PoolRollout,
  pass: NonNullable<CtReconcilePlan['rollout']>,
): void {
  const { onTarget, total } = pass.plan;
  const emit = (member: string, step: 'rebuilding' | 'rebuilt') =>
    ctx.events.emit('pool-rollout', {
      poolId,
      to: record.to,
      member,
      step,
      onTarget: onTarget.length,
      total,
    });
  for (const member of pass.settled) emit(member, 'rebuilt');
  for (const member of pass.begun) emit(member, 'rebuilding');
  if (record.finishedAt) ctx.events.emit('pool-rolled-out', { poolId, to: record.to, total });
}

/**
 * Marks a member's Pod free since `at` (`null` takes the mark away). A Pod gone or changed since the read is left to
 * the next pass, which reads it again.
 */
async function markFree(ctx: VdiContext, namespace: string, member: string, at: Date | null): Promise<void> {
  try {
    await ctx.cluster
      .resource(podKind)
      .in(namespace)
      .patch(member, { metadata: { annotations: { [freeSinceAnnotation]: at?.toISOString() ?? null } } });
  } catch (error) {
    if (!isVdiError(error, 'NOT_FOUND')) throw error;
  }
}

async function carryOut(
  ctx: VdiContext,
  run: {
    namespace: string;
    stored: StoredCtPool;
    plan: CtReconcilePlan;
    leases: readonly LeaseObject[];
    result: ReconcileCtPoolResult;
  },
  timeoutMs = defaultTimeoutMs,
): Promise<void> {
  const { namespace, stored, plan, result } = run;
  const pool = stored.spec.name;
  const leaseOf = (member: string) =>
    run.leases.find((lease) => lease.metadata.name === leaseNameFor(member));
  const target = (member: string): CtMemberTarget => ({ namespace, stored, member });
  // the member's Lease is taken before its Pod goes, so a claim that lands first keeps it
  const withRemovalLease = async (member: string, act: () => Promise<void>): Promise<boolean> => {
    const taken = await takeRemovalLease(ctx, { namespace, pool, member }, leaseOf(member));
    if (!taken) return false;
    await act();
    await deleteLeaseAsRead(ctx, taken);
    return true;
  };
  const ordered = [
    ...plan.steps.filter((step) => step.kind === 'remove'),
    ...plan.steps.filter((step) => step.kind !== 'remove'),
  ];
  for (const step of ordered) {
    const { member } = step;
    switch (step.kind) {
      case 'remove':
        if (await withRemovalLease(member, () => deleteMemberObjects(ctx, { namespace, member }))) {
          result.removed.push(member);
        } else result.held.push(member);
        break;
      case 'replace': {
        const replaced = await withRemovalLease(member, async () => {
          await deletePodAndWait(ctx, { namespace, member, uid: step.uid }, { timeoutMs });
          await createMemberPod(ctx, target(member), await ensureHomeClaim(ctx, target(member)));
        });
        (replaced ? result.replaced : result.held).push(member);
        break;
      }
      case 'complete': {
        const homeClaim = await ensureHomeClaim(ctx, target(member));
        if (step.service) await ensureService(ctx, target(member));
        if (step.pod) await createMemberPod(ctx, target(member), homeClaim);
        result.completed.push(member);
        break;
      }
      case 'create': {
        const homeClaim = await ensureHomeClaim(ctx, target(member));
        await ensureService(ctx, target(member));
        await createMemberPod(ctx, target(member), homeClaim);
        result.created.push(member);
        break;
      }
      case 'skip':
        if (step.reason === 'claimed') result.held.push(member);
        break;
      case 'drop-removal': {
        const lease = leaseOf(member);
        if (lease) await deleteLeaseAsRead(ctx, lease);
        break;
      }
      case 'mark-free':
      case 'unmark-free':
        await markFree(ctx, namespace, member, step.kind === 'mark-free' ? ctx.clock.now() : null);
        break;
    }
  }
}
