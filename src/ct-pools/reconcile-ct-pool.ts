import { type AdmissionPlan, admitPool } from '../capacity/admit-pool.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { ctMemberLabel, kindLabel, specConfigMapName } from '../ct/ct-keys.js';
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
import { requireCtPool, type StoredCtPool, specOf } from '../ct/ct-pool-store.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { leasePoolLabel, poolLabel } from '../keys.js';
import { nodeKind, podKind, pvcKind, serviceKind } from '../kube/resource-kinds.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { validateNamespace, validatePoolName } from '../validate.js';
import { toCtAdmissionInput } from './ct-admission.js';
import { type CtMemberRead, type CtReconcilePlan, planCtReconcile } from './plan-ct-reconcile.js';

/** Options of {@link reconcileCtPool}. @category ct-pools */
export interface ReconcileCtPoolOptions {
  /** The pool's name. */
  name: string;
  /** Defaults to the SDK's namespace. */
  namespace?: string;
  /** How long deleting a finished Pod before it is made again may take. @defaultValue 120000 */
  timeoutMs?: number;
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
  return { members, leases, taken };
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

/** The plan of a pass over the members as read, for the spec. */
function planPass(
  ctx: VdiContext,
  spec: CtPoolSpec,
  read: Awaited<ReturnType<typeof readMembers>>,
): CtReconcilePlan {
  return planCtReconcile({
    pool: spec.name,
    size: spec.size,
    image: spec.image,
    home: spec.home !== undefined,
    ...read,
    now: ctx.clock.now(),
  });
}

/**
 * One reconcile pass of a container pool: reads its spec and members, asks {@link planCtReconcile}, admits the
 * new Pods' extended resources, and carries the plan out. Removals go first, then each new member's home claim,
 * Service and Pod, in that order: a pass that dies half-way leaves objects labelled with the member, and the
 * next pass completes them. A replace or a removal takes the member's Lease (holder `corral-vdi/resize`) before
 * it deletes anything, so a claim landing meanwhile keeps its member, and deletes the Lease after.
 *
 * @example
 * ```ts
 * const result = await reconcileCtPool(vdi.context, { name: 'devbox' });
 * console.log(result.created, result.removed);
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
  const quiet = await passWithNothingToDo(ctx, namespace, options.name);
  if (quiet) return quiet;
  const stored = await requireCtPool(ctx, namespace, options.name);
  const { spec } = stored;
  const read = await readMembers(ctx, namespace, spec.name, { quiet: false });
  const plan = planPass(ctx, spec, read);
  const capacity = await admit(ctx, stored, namespace, plan.newPods);
  const result: ReconcileCtPoolResult = {
    id: formatPoolId({ kind: 'ct', namespace, pool: spec.name }),
    created: [],
    completed: [],
    replaced: [],
    removed: [],
    held: [],
    ...(capacity ? { capacity } : {}),
  };
  await carryOut(ctx, { namespace, stored, plan, leases: read.leases, result }, options.timeoutMs);
  return result;
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
  const read = await readMembers(ctx, namespace, spec.name, { quiet: true });
  const plan = planPass(ctx, spec, read);
  if (!plan.steps.every((step) => step.kind === 'skip')) return undefined;
  return {
    id: formatPoolId({ kind: 'ct', namespace, pool: spec.name }),
    created: [],
    completed: [],
    replaced: [],
    removed: [],
    held: plan.steps.filter((step) => step.reason === 'claimed').map((step) => step.member),
  };
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
    }
  }
}
