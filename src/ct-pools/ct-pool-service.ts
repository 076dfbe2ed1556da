import { z } from 'zod';
import { shownHolder } from '../claims/claim-liveness.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { ctMemberLabel, kindLabel, specConfigMapName } from '../ct/ct-keys.js';
import { toCtMemberFacts } from '../ct/ct-member-facts.js';
import { deleteMemberObjects } from '../ct/ct-member-writes.js';
import { type CtPoolSpec, parseCtPoolSpec } from '../ct/ct-pool-spec.js';
import { buildSpecConfigMap, listCtPoolConfigMaps, readCtPool, specOf } from '../ct/ct-pool-store.js';
import type { MemberPower } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatDesktopId, formatPoolId } from '../ids.js';
import { leasePoolLabel, poolLabel, removalHolder } from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import type { ListOptions } from '../kube/resource.js';
import { configMapKind, podKind, pvcKind, serviceKind } from '../kube/resource-kinds.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import { defaultPoolActor } from '../pool-options.js';
import { type ReclaimAction, reclaimActionOf } from '../pool-settings.js';
import { runAudited } from '../pools/run-audited.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { checkMemberObjects } from './check-member-objects.js';
import { type CtMemberRead, planCtPoolDelete } from './plan-ct-reconcile.js';

/** Options of {@link applyCtPool}. @category ct-pools */
export interface ApplyCtPoolOptions {
  /** The pool's spec, checked by {@link parseCtPoolSpec} before anything is written. */
  spec: unknown;
  /** Defaults to the SDK's namespace. */
  namespace?: string;
  /** Who applies it, for the audit log. */
  identity?: string;
  /** Accept an http `reclaimWebhook` on localhost, 127.0.0.1 or ::1. @defaultValue false */
  allowLoopbackHttpWebhook?: boolean;
}

/** What {@link applyCtPool} returns. @category ct-pools */
export interface ApplyCtPoolResult {
  /** `ct/<namespace>/<pool>`. */
  id: string;
  /** The spec as stored, defaults filled in. */
  spec: CtPoolSpec;
  /** The reclaim action in force: the spec's, else `recreate`. */
  reclaimAction: ReclaimAction;
  /** The pool is new; `false` when an existing spec was replaced. */
  created: boolean;
}

/** One member of a container pool, as `ct-pool get` shows it. @category ct-pools */
export interface CtPoolMemberView {
  member: string;
  /** `ct/<namespace>/<member>`. */
  desktopId: string;
  /** The Pod's phase, container waiting reason, `NotReady` or `Terminating`; `Absent` without a Pod. */
  phase: string;
  power: MemberPower | 'absent';
  /** Who holds it; `undefined` when it is free. */
  owner: string | undefined;
}

/** A container pool: its spec and its members. @category ct-pools */
export interface CtPoolView {
  /** `ct/<namespace>/<pool>`. */
  id: string;
  namespace: string;
  name: string;
  spec: CtPoolSpec;
  /** The reclaim action in force: the spec's, else `recreate`. */
  reclaimAction: ReclaimAction;
  members: CtPoolMemberView[];
}

/** Options of {@link deleteCtPool}. @category ct-pools */
export interface DeleteCtPoolOptions {
  name: string;
  namespace?: string;
  /** Delete even while members are claimed: an administrator's action, audited as `vdi ct-pool force-delete`. */
  force?: boolean;
  identity?: string;
}

/** What {@link deleteCtPool} returns. @category ct-pools */
export interface DeleteCtPoolResult {
  id: string;
  /** The members whose objects were deleted. */
  deleted: string[];
  /** Claimed members were deleted because of `force`. */
  forced: boolean;
}

const applySchema = z.object({
  spec: z.unknown(),
  namespace: namespaceSchema.optional(),
  identity: identitySchema.optional(),
  allowLoopbackHttpWebhook: z.boolean().optional(),
});
const nameSchema = z.object({ name: poolNameSchema, namespace: namespaceSchema.optional() });
const deleteSchema = nameSchema.extend({
  force: z.boolean().optional(),
  identity: identitySchema.optional(),
});

function nameTaken(namespace: string, pool: string, what: string): VdiError {
  return new VdiError(
    'ALREADY_EXISTS',
    `The pool name "${pool}" is taken in namespace "${namespace}" by ${what}; choose another name for the container pool. Nothing was written.`,
    { details: { namespace, pool, field: 'name' } },
  );
}

/**
 * Creates a container pool, or replaces its spec, as the ConfigMap `corral-vdi-ct-<pool>` (labels
 * `corral.dev/vdi-pool=<pool>`, `corral.dev/vdi-kind=ct`). The spec is checked, and the name refused when a VM
 * pool uses it, before anything is written. It makes no member: a reconcile pass does
 * ({@link reconcileCtPool}, or the broker's loop).
 *
 * @example
 * ```ts
 * await applyCtPool(vdi.context, { spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 3 } });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` naming each bad field; `ALREADY_EXISTS` when a VM pool (or another
 *   ConfigMap) has the name; `CONFLICT` when the spec changed while it was applied; `FORBIDDEN` without the
 *   ConfigMap permissions.
 * @category ct-pools
 */
export async function applyCtPool(ctx: VdiContext, options: ApplyCtPoolOptions): Promise<ApplyCtPoolResult> {
  const parsed = parseOptions(applySchema, options, 'applyCtPool');
  const spec = parseCtPoolSpec(parsed.spec, {
    allowLoopbackHttpWebhook: parsed.allowLoopbackHttpWebhook ?? false,
  });
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const id = formatPoolId({ kind: 'ct', namespace, pool: spec.name });
  return await runAudited(
    ctx,
    { action: 'vdi ct-pool apply', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const [vms, current] = await Promise.all([
        ctx.cluster.listVms(namespace, `${poolLabel}=${spec.name}`),
        ctx.cluster.resource(configMapKind).in(namespace).get(specConfigMapName(spec.name)),
      ]);
      if (vms.length > 0) throw nameTaken(namespace, spec.name, `a VM pool of ${vms.length} members`);
      if (current && current.metadata.labels?.[kindLabel] !== 'ct') {
        throw nameTaken(
          namespace,
          spec.name,
          `ConfigMap ${specConfigMapName(spec.name)}, which is not a pool's`,
        );
      }
      await checkMemberObjects(ctx, namespace, spec, current);
      const configMaps = ctx.cluster.resource(configMapKind).in(namespace);
      // written as read: one made or changed since is a conflict for the caller
      await readModifyWrite(
        configMaps,
        specConfigMapName(spec.name),
        () => buildSpecConfigMap(spec, current),
        {
          known: { object: current },
          attempts: 1,
        },
      );
      return { id, spec, reclaimAction: reclaimActionOf(spec, true), created: current === undefined };
    },
  );
}

async function readMembers(ctx: VdiContext, namespace: string, pool: string) {
  const selector = `${kindLabel}=ct,${poolLabel}=${pool}`;
  const [pods, services, claims, leases] = await Promise.all([
    ctx.cluster.resource(podKind).in(namespace).list(selector),
    ctx.cluster.resource(serviceKind).in(namespace).list(selector),
    ctx.cluster.resource(pvcKind).in(namespace).list(selector),
    ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`),
  ]);
  const names = new Set(
    [...pods, ...services, ...claims]
      .map((object) => object.metadata.labels?.[ctMemberLabel] ?? '')
      .filter(Boolean),
  );
  const members: CtMemberRead[] = [...names].sort(compareNatural).map((member) => {
    const pod = pods.find((candidate) => candidate.metadata.name === member);
    return {
      member,
      pod: pod && toCtMemberFacts(pod),
      service: services.some((service) => service.metadata.name === member),
      homeClaim: claims.some((claim) => claim.metadata.labels?.[ctMemberLabel] === member),
    };
  });
  return { members, leases };
}

function viewOf(
  ctx: VdiContext,
  namespace: string,
  read: Awaited<ReturnType<typeof readMembers>>,
): CtPoolMemberView[] {
  const now = ctx.clock.now();
  return read.members.map(({ member, pod }) => {
    const lease = read.leases.find((candidate) => candidate.metadata.name === leaseNameFor(member));
    const holder = pod ? shownHolder({ member: pod, lease, now }) : lease?.spec.holderIdentity;
    return {
      member,
      desktopId: formatDesktopId({ kind: 'ct', namespace, member }),
      phase: pod?.phase ?? 'Absent',
      power: pod?.power ?? 'absent',
      owner: holder === removalHolder ? undefined : holder || undefined,
    };
  });
}

/**
 * One container pool: its stored spec and each member's phase and holder.
 *
 * @throws {@link VdiError} `POOL_NOT_FOUND`; `INVALID_INPUT`.
 * @category ct-pools
 */
export async function getCtPool(
  ctx: VdiContext,
  options: { name: string; namespace?: string },
): Promise<CtPoolView> {
  const { name, namespace: asked } = parseOptions(nameSchema, options, 'getCtPool');
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const stored = await readCtPool(ctx, namespace, name);
  if (!stored) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `There is no container pool "${name}" in namespace "${namespace}"; list them with "corral-vdi ct-pool list", or apply its spec.`,
      { details: { namespace, pool: name } },
    );
  }
  const members = viewOf(ctx, namespace, await readMembers(ctx, namespace, name));
  return {
    id: formatPoolId({ kind: 'ct', namespace, pool: name }),
    namespace,
    name,
    spec: stored.spec,
    reclaimAction: reclaimActionOf(stored.spec, true),
    members,
  };
}

/**
 * Every container pool of a namespace, with its members.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when a stored spec is no longer valid.
 * @category ct-pools
 */
export async function listCtPools(
  ctx: VdiContext,
  options: { namespace?: string } = {},
): Promise<CtPoolView[]> {
  return await readCtPoolViews(ctx, validateNamespace(options.namespace ?? ctx.defaultNamespace));
}

/**
 * What {@link listCtPools} answers for a namespace already checked; with `shared`, its list of specs is shared with
 * the other reads of the same request.
 */
export async function readCtPoolViews(
  ctx: VdiContext,
  namespace: string,
  options: Pick<ListOptions, 'cached' | 'shared'> = {},
): Promise<CtPoolView[]> {
  const configMaps = await listCtPoolConfigMaps(ctx, namespace, options);
  const views = await Promise.all(
    configMaps.map(async (configMap) => {
      const spec = specOf(configMap);
      const members = viewOf(ctx, namespace, await readMembers(ctx, namespace, spec.name));
      return {
        id: formatPoolId({ kind: 'ct', namespace, pool: spec.name }),
        namespace,
        name: spec.name,
        spec,
        reclaimAction: reclaimActionOf(spec, true),
        members,
      };
    }),
  );
  return views.sort((left, right) => compareNatural(left.name, right.name));
}

/**
 * Deletes a container pool: takes each free member's Lease (holder `corral-vdi/resize`) so no claim lands on it,
 * deletes the ConfigMap (so no reconcile pass makes members again), then each member's Pod, Service and home
 * claims, then the Leases. A delete that dies after the ConfigMap went leaves members without a spec; deleting
 * again finds them by their labels and finishes. On a cluster with a garbage collector the members' owner
 * reference to the ConfigMap deletes them too.
 *
 * @throws {@link VdiError} `POOL_NOT_FOUND`; `POOL_IN_USE` (nothing deleted) while members are claimed and not
 *   `force`; `INVALID_INPUT`.
 * @category ct-pools
 */
export async function deleteCtPool(
  ctx: VdiContext,
  options: DeleteCtPoolOptions,
): Promise<DeleteCtPoolResult> {
  const parsed = parseOptions(deleteSchema, options, 'deleteCtPool');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const pool = parsed.name;
  const id = formatPoolId({ kind: 'ct', namespace, pool });
  const force = parsed.force ?? false;
  return await runAudited(
    ctx,
    { action: 'vdi ct-pool delete', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const configMap = await ctx.cluster.resource(configMapKind).in(namespace).get(specConfigMapName(pool));
      const stored = configMap?.metadata.labels?.[kindLabel] === 'ct' ? configMap : undefined;
      const read = await readMembers(ctx, namespace, pool);
      if (!stored && read.members.length === 0) {
        throw new VdiError(
          'POOL_NOT_FOUND',
          `There is no container pool "${pool}" in namespace "${namespace}".`,
          {
            details: { namespace, pool },
          },
        );
      }
      const plan = planCtPoolDelete({ pool, ...read, force, now: ctx.clock.now() });
      if (plan.kind === 'reject') {
        throw new VdiError(plan.code, plan.message, { details: { namespace, pool, claimed: plan.claimed } });
      }
      const leaseOf = (member: string) =>
        read.leases.find((lease) => lease.metadata.name === leaseNameFor(member));
      const leases = [];
      for (const member of plan.members) {
        const taken = await takeRemovalLease(ctx, { namespace, pool, member }, leaseOf(member));
        if (taken) leases.push(taken);
        else if (!force) {
          throw new VdiError(
            'POOL_IN_USE',
            `Member ${member} of container pool "${pool}" was claimed while the pool was being deleted; release it first, or delete with force.`,
            { details: { namespace, pool, claimed: [member] } },
          );
        }
      }
      if (stored) {
        await ctx.cluster
          .resource(configMapKind)
          .in(namespace)
          .delete(specConfigMapName(pool), {
            preconditions: { uid: stored.metadata.uid ?? '' },
            propagationPolicy: 'Background',
          })
          .catch((error: unknown) => {
            if (!isConflictReason(error, 'Conflict')) throw error;
          });
      }
      for (const member of plan.members) await deleteMemberObjects(ctx, { namespace, member });
      for (const lease of leases) await deleteLeaseAsRead(ctx, lease);
      if (force) {
        // a forced delete ends the claims it overrode: their Leases name members that are gone
        for (const lease of read.leases) {
          if (lease.spec.holderIdentity !== removalHolder) await deleteLeaseAsRead(ctx, lease);
        }
      }
      return { id, deleted: plan.members, forced: plan.forced };
    },
    (result) => (result.forced ? 'vdi ct-pool force-delete' : 'vdi ct-pool delete'),
  );
}
