import { z } from 'zod';
import { type AuditAction, recordAudit } from '../audit.js';
import type { AdmissionPlan } from '../capacity/admit-pool.js';
import { readGoldenVm, requireCapacity } from '../capacity/capacity-service.js';
import { classifyClaim, isClaimable } from '../claims/claim-liveness.js';
import { leaseNameFor } from '../claims/lease-name.js';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import { poolLabel } from '../keys.js';
import type { LeaseObject, VirtualMachine } from '../kubevirt-types.js';
import {
  goldenNameSchema,
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import {
  cloneMembers,
  defaultCloneConcurrency,
  defaultCloneTimeoutMs,
  removeMembers,
} from './clone-runner.js';
import { memberNameFor } from './member-names.js';
import { planResize } from './plan-resize.js';
import { describePools, type PoolMemberView, type PoolView } from './pool-view.js';

/** The most members one pool may have. @category pools */
export const maxPoolSize = 1000;
/** The identity audit records name when a pool call names none. @category pools */
export const defaultPoolActor = 'corral-vdi';

const deleteConcurrency = 8;

/** Options of {@link createPool}. @category pools */
export interface CreatePoolOptions {
  /** The pool's name: the `corral.dev/vdi-pool` label value and the stem of member names `<name>-<n>`. */
  name: string;
  /** The golden VM to clone, in `namespace`. */
  from: string;
  /** How many members to make, 1 to {@link maxPoolSize}. */
  size: number;
  /** Where the golden VM lives and the members go; defaults to the SDK's namespace. */
  namespace?: string;
  /** Members are destroyed and cloned again from the golden VM on release. @defaultValue `false` */
  ephemeral?: boolean;
  /** Clones under way at once. @defaultValue 4 */
  concurrency?: number;
  /** How long one clone may take. @defaultValue 120000 (2 minutes) */
  cloneTimeoutMs?: number;
  /** After a failure, keep the members that were made (and the failed clone objects) instead of removing them. */
  keepPartial?: boolean;
  /** Cancels the create; what was made is then removed like after a failure. */
  signal?: AbortSignal;
  /** Who acts, for the audit record. @defaultValue {@link defaultPoolActor} */
  identity?: string;
}

/** What {@link createPool} returns. @category pools */
export interface CreatePoolResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  name: string;
  namespace: string;
  /** The member names, in order. */
  members: string[];
  ephemeral: boolean;
  /** The golden VM. */
  source: string;
  /** The capacity admission that let the pool through. */
  capacity: AdmissionPlan;
}

/** Options of {@link listPools}. @category pools */
export interface ListPoolsOptions {
  /** Namespaces to read; defaults to the SDK's namespace. */
  namespaces?: string[];
}

/** Options naming one pool. @category pools */
export interface PoolOptions {
  name: string;
  namespace?: string;
}

/** Options of {@link deletePool}. @category pools */
export interface DeletePoolOptions extends PoolOptions {
  /** Delete even while members are claimed: an administrator's action, audited as `vdi pool force-delete`. */
  force?: boolean;
  /** Who acts, for the audit record. @defaultValue {@link defaultPoolActor} */
  identity?: string;
}

/** What {@link deletePool} returns. @category pools */
export interface DeletePoolResult {
  id: string;
  /** The member VMs deleted. */
  members: string[];
  /** How many claim Leases and clone objects went with them. */
  leases: number;
  clones: number;
  /** Claimed members were deleted because of `force`. */
  forced: boolean;
}

/** Options of {@link resizePool}. @category pools */
export interface ResizePoolOptions extends PoolOptions {
  /** The number of members wanted, 1 to {@link maxPoolSize}. */
  size: number;
  /** The golden VM for new members; needed only when the members do not record theirs. */
  from?: string;
  concurrency?: number;
  cloneTimeoutMs?: number;
  keepPartial?: boolean;
  signal?: AbortSignal;
  identity?: string;
}

/** What {@link resizePool} returns. @category pools */
export interface ResizePoolResult {
  id: string;
  /** Members before and after. */
  from: number;
  size: number;
  added: string[];
  removed: string[];
  /** Members chosen for removal that someone claimed in the meantime; they stay. */
  skipped: string[];
  /** The admission of the growth, when the pool grew. */
  capacity?: AdmissionPlan;
}

const commonSchema = {
  namespace: namespaceSchema.optional(),
  concurrency: z.number().int().min(1).max(64).optional(),
  cloneTimeoutMs: z.number().int().positive().optional(),
  keepPartial: z.boolean().optional(),
  signal: z.instanceof(AbortSignal).optional(),
  identity: identitySchema.optional(),
};
const createSchema = z.object({
  name: poolNameSchema,
  from: goldenNameSchema,
  size: z.number(),
  ephemeral: z.boolean().optional(),
  ...commonSchema,
});
const resizeSchema = z.object({
  name: poolNameSchema,
  size: z.number(),
  from: goldenNameSchema.optional(),
  ...commonSchema,
});
const poolSchema = z.object({ name: poolNameSchema, namespace: namespaceSchema.optional() });
const deleteSchema = poolSchema.extend({
  force: z.boolean().optional(),
  identity: identitySchema.optional(),
});
const listSchema = z.object({ namespaces: z.array(namespaceSchema).optional() });

function validateSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 1 || size > maxPoolSize) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pool size ${size} is not valid; pass a whole number from 1 to ${maxPoolSize}. To remove a pool, delete it.`,
      { details: { size, maxPoolSize } },
    );
  }
}

/** Runs `act`, recording its outcome in the audit log either way; `actionFor` may name the action from the result. */
async function audited<T>(
  ctx: VdiContext,
  entry: { action: AuditAction; user: string; target: string },
  act: () => Promise<T>,
  actionFor: (result: T) => AuditAction = () => entry.action,
): Promise<T> {
  let result: T;
  try {
    result = await act();
  } catch (error) {
    await recordAudit(ctx, { ...entry, error });
    throw error;
  }
  await recordAudit(ctx, { ...entry, action: actionFor(result) });
  return result;
}

async function readPool(
  ctx: VdiContext,
  namespace: string,
  name: string,
): Promise<{ pool: PoolView; vms: VirtualMachine[]; leases: LeaseObject[] }> {
  const [vms, leases] = await Promise.all([
    ctx.cluster.listVms(namespace, `${poolLabel}=${name}`),
    ctx.cluster.listLeases(namespace),
  ]);
  const [pool] = describePools({ namespace, vms, leases, now: ctx.clock.now() });
  if (!pool) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `Pool "${name}" has no members in namespace "${namespace}"; check the name and the namespace.`,
      {
        details: { pool: name, namespace },
      },
    );
  }
  return { pool, vms, leases };
}

/** Clones `members`, and on a failure reports member by member after removing what was made (unless kept). */
async function makeMembers(
  ctx: VdiContext,
  input: {
    namespace: string;
    pool: string;
    members: string[];
    golden: VirtualMachine;
    ephemeral: boolean;
    concurrency: number;
    timeoutMs: number;
    keepPartial: boolean;
    signal?: AbortSignal | undefined;
    doing: string;
  },
): Promise<void> {
  const outcomes = await cloneMembers(ctx, input);
  if (outcomes.every((outcome) => outcome.status === 'ready')) return;
  const failures = outcomes.filter(
    (outcome) => outcome.status !== 'ready' && outcome.status !== 'not-started',
  );

  let cleanup = '';
  if (input.keepPartial) {
    const made = outcomes.filter((outcome) => outcome.status === 'ready').map((outcome) => outcome.member);
    cleanup = `Kept as asked: ${made.length > 0 ? made.join(', ') : 'no member was ready'}, and the clone objects of the failed members for inspection. Delete the pool to remove them.`;
  } else {
    try {
      await removeMembers(ctx, {
        namespace: input.namespace,
        pool: input.pool,
        outcomes,
        concurrency: input.concurrency,
      });
      cleanup = 'Everything this call made was removed again.';
    } catch (error) {
      cleanup = `Removing what was made failed (${(error as Error).message}); delete the pool to remove what remains.`;
    }
  }
  const report = outcomes
    .filter((outcome) => outcome.status !== 'ready' || input.keepPartial)
    .map((outcome) => `${outcome.member}: ${outcome.status}${outcome.error ? ` (${outcome.error})` : ''}`)
    .join('; ');
  const first = failures[0];
  const cancelled = input.signal?.aborted === true;
  const code = cancelled ? 'CANCELLED' : first?.status === 'timed-out' ? 'CLONE_TIMEOUT' : 'CLONE_FAILED';
  const what = cancelled ? 'was cancelled' : 'failed';
  throw new VdiError(code, `${input.doing} ${what}: ${report}. ${cleanup}`, {
    retryable: code === 'CLONE_TIMEOUT',
    details: { pool: input.pool, namespace: input.namespace, members: outcomes, kept: input.keepPartial },
  });
}

/**
 * Creates a pool: `size` members `<name>-1 … <name>-<size>` cloned from the golden VM `from` through
 * VirtualMachineClone, all in one namespace.
 *
 * Every refusal comes before any change: a bad name or size, a golden VM missing from the namespace (other
 * namespaces are never searched), a member name already taken or an existing pool of that name, and a capacity
 * admission that says the devices the golden VM asks for do not fit. Clones then run `concurrency` at a time;
 * each member counts only once its clone reached `Succeeded`, and each finished clone object is deleted.
 * Members start stopped, carry the pool label (and, when `ephemeral`, the ephemeral label), and record their
 * golden VM. A failure part-way is reported member by member in `details.members`, after the members that were
 * made are removed again, unless `keepPartial`.
 *
 * @example
 * ```ts
 * vdi.events.on('pool-progress', (event) => console.log(`${event.done}/${event.total} ${event.member} ${event.step}`));
 * const pool = await createPool(vdi.context, { name: 'devpool', from: 'golden-desktop', size: 3 });
 * console.log(pool.members); // ['devpool-1', 'devpool-2', 'devpool-3']
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`, `GOLDEN_NOT_FOUND`, `ALREADY_EXISTS`, `INSUFFICIENT_CAPACITY` (all
 *   before any change); `CLONE_FAILED`, `CLONE_TIMEOUT`, or `CANCELLED` when
 *   `signal` aborted it, with `details.members`.
 * @category pools
 */
export async function createPool(ctx: VdiContext, options: CreatePoolOptions): Promise<CreatePoolResult> {
  const parsed = parseOptions(createSchema, options, 'createPool');
  validateSize(parsed.size);
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, from, size } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const ephemeral = parsed.ephemeral ?? false;
  return await audited(
    ctx,
    { action: 'vdi pool create', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const golden = await readGoldenVm(ctx, namespace, from);
      const vms = await ctx.cluster.listVms(namespace);
      const existing = vms
        .filter((vm) => vm.metadata.labels?.[poolLabel] === name)
        .map((vm) => vm.metadata.name ?? '');
      if (existing.length > 0) {
        throw new VdiError(
          'ALREADY_EXISTS',
          `Pool "${name}" already exists in namespace "${namespace}" (${existing.join(', ')}); resize it, or delete it first.`,
          { details: { pool: name, namespace, members: existing } },
        );
      }
      const members = Array.from({ length: size }, (_, index) => memberNameFor(name, index + 1));
      const names = new Set(vms.map((vm) => vm.metadata.name));
      const taken = members.filter((member) => names.has(member));
      if (taken.length > 0) {
        throw new VdiError(
          'ALREADY_EXISTS',
          `The member name${taken.length === 1 ? '' : 's'} ${taken.join(', ')} ${taken.length === 1 ? 'is' : 'are'} already taken by ${taken.length === 1 ? 'a VM' : 'VMs'} in namespace "${namespace}"; choose another pool name or remove ${taken.length === 1 ? 'that VM' : 'those VMs'}.`,
          { details: { pool: name, namespace, taken } },
        );
      }
      const capacity = await requireCapacity(ctx, { golden, size, namespace });
      await makeMembers(ctx, {
        namespace,
        pool: name,
        members,
        golden,
        ephemeral,
        concurrency: parsed.concurrency ?? defaultCloneConcurrency,
        timeoutMs: parsed.cloneTimeoutMs ?? defaultCloneTimeoutMs,
        keepPartial: parsed.keepPartial ?? false,
        signal: parsed.signal,
        doing: `Creating pool "${name}"`,
      });
      return { id, name, namespace, members, ephemeral, source: from, capacity };
    },
  );
}

/**
 * Lists the pools of the given namespaces, read back from the `corral.dev/vdi-pool` label of their VMs: each
 * member in natural order (`-2` before `-10`) with who has it (free, claimed by whom and since when, or a
 * v0.6.0 assignment) and its power state. `kubectl get vm -l corral.dev/vdi-pool` shows the same members.
 *
 * @example
 * ```ts
 * for (const pool of await listPools(vdi.context, { namespaces: ['corral-vms'] })) {
 *   console.log(`${pool.name} (ns/${pool.namespace}, ${pool.counts.members} members)`);
 * }
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for a bad namespace name.
 * @category pools
 */
export async function listPools(ctx: VdiContext, options: ListPoolsOptions = {}): Promise<PoolView[]> {
  const parsed = parseOptions(listSchema, options, 'listPools');
  const namespaces = (parsed.namespaces ?? [ctx.defaultNamespace]).map(validateNamespace);
  const pools = await Promise.all(
    namespaces.map(async (namespace) => {
      const [vms, leases] = await Promise.all([
        ctx.cluster.listVms(namespace, poolLabel),
        ctx.cluster.listLeases(namespace),
      ]);
      return describePools({ namespace, vms, leases, now: ctx.clock.now() });
    }),
  );
  return pools.flat();
}

/**
 * One pool, as {@link listPools} shows it.
 *
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when no VM of the namespace carries the pool label.
 * @category pools
 */
export async function getPool(ctx: VdiContext, options: PoolOptions): Promise<PoolView> {
  const parsed = parseOptions(poolSchema, options, 'getPool');
  return (await readPool(ctx, validateNamespace(parsed.namespace ?? ctx.defaultNamespace), parsed.name)).pool;
}

function holderText(member: PoolMemberView): string {
  const { state } = member;
  if (state.kind === 'claimed') return `${member.name} (${state.holder})`;
  if (state.kind === 'legacy-assigned') return `${member.name} (${state.user}, v0.6.0)`;
  return member.name;
}

/**
 * Deletes a pool: its clone objects first (so none produces a member afterwards), then its member VMs and their
 * claim Leases. While members are claimed (or assigned by v0.6.0) it refuses, unless `force`, which is recorded
 * as `vdi pool force-delete`.
 *
 * @example
 * ```ts
 * await deletePool(vdi.context, { name: 'devpool' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND`; `POOL_IN_USE` while members are claimed and `force` is not set.
 * @category pools
 */
export async function deletePool(ctx: VdiContext, options: DeletePoolOptions): Promise<DeletePoolResult> {
  const parsed = parseOptions(deleteSchema, options, 'deletePool');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const force = parsed.force ?? false;
  return await audited(
    ctx,
    {
      action: force ? 'vdi pool force-delete' : 'vdi pool delete',
      user: parsed.identity ?? defaultPoolActor,
      target: id,
    },
    async () => {
      const clones = await ctx.cluster.listClones(namespace, `${poolLabel}=${name}`);
      let read: Awaited<ReturnType<typeof readPool>> | undefined;
      try {
        read = await readPool(ctx, namespace, name);
      } catch (error) {
        if (!isVdiError(error, 'POOL_NOT_FOUND') || clones.length === 0) throw error;
      }
      const members = read?.pool.members ?? [];
      const busy = members.filter(
        (member) => member.state.kind === 'claimed' || member.state.kind === 'legacy-assigned',
      );
      if (busy.length > 0 && !force) {
        throw new VdiError(
          'POOL_IN_USE',
          `Pool "${name}" has claimed members: ${busy.map(holderText).join(', ')}. Release them first, or delete with force (an administrator's action, recorded in the audit log).`,
          { details: { pool: name, namespace, claimed: busy.map((member) => member.name) } },
        );
      }
      for (const clone of clones) await ctx.cluster.deleteClone(namespace, clone.metadata.name ?? '');
      const uids = new Map((read?.vms ?? []).map((vm) => [vm.metadata.name ?? '', vm.metadata.uid ?? '']));
      const leases = new Map((read?.leases ?? []).map((lease) => [lease.metadata.name ?? '', lease]));
      let leaseCount = 0;
      let done = 0;
      await forEachBounded(members, deleteConcurrency, async (member) => {
        await ctx.cluster.deleteVm(namespace, member.name, { uid: uids.get(member.name) ?? '' });
        const lease = leases.get(leaseNameFor(member.name));
        if (
          lease &&
          (await ctx.cluster.deleteLease(namespace, lease.metadata.name ?? '', {
            uid: lease.metadata.uid ?? '',
          }))
        ) {
          leaseCount += 1;
        }
        done += 1;
        ctx.events.emit('pool-progress', {
          poolId: id,
          member: member.name,
          step: 'removed',
          done,
          total: members.length,
        });
      });
      return {
        id,
        members: members.map((member) => member.name),
        leases: leaseCount,
        clones: clones.length,
        forced: busy.length > 0,
      };
    },
    (result) => (result.forced ? 'vdi pool force-delete' : 'vdi pool delete'),
  );
}

/** The golden VM new members of an existing pool are cloned from: the one the members record, or `from`. */
async function goldenForGrowth(
  ctx: VdiContext,
  namespace: string,
  pool: PoolView,
  from: string | undefined,
): Promise<VirtualMachine> {
  if (from !== undefined) {
    return await readGoldenVm(ctx, namespace, from);
  }
  const sources = [
    ...new Set(pool.members.map((member) => member.source).filter((source) => source !== undefined)),
  ];
  if (sources.length !== 1 || pool.members.some((member) => member.source === undefined)) {
    throw new VdiError(
      'INVALID_INPUT',
      `The members of pool "${pool.name}" do not name one golden VM (${sources.length === 0 ? 'none recorded' : sources.join(', ')}); pass from with the golden VM to clone new members from.`,
      { details: { pool: pool.name, namespace, sources } },
    );
  }
  return await readGoldenVm(ctx, namespace, sources[0] as string);
}

/**
 * Resizes a pool to `size` members. Growing clones the lowest free indices from the golden VM the members record
 * (or `from`), with the same capacity admission as a create: the new members and every member not running now
 * must fit at once. Shrinking removes only free members, highest index first, and never a claimed one: when too
 * few are free, it refuses before removing anything and says how far the pool can shrink. A member claimed
 * between the check and its removal is skipped and stays.
 *
 * @example
 * ```ts
 * await resizePool(vdi.context, { name: 'devpool', size: 5 });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND`; `GOLDEN_NOT_FOUND`; `INSUFFICIENT_CAPACITY`;
 *   `POOL_IN_USE` when too few members are free to shrink; `CLONE_FAILED`, `CLONE_TIMEOUT` while growing.
 * @category pools
 */
export async function resizePool(ctx: VdiContext, options: ResizePoolOptions): Promise<ResizePoolResult> {
  const parsed = parseOptions(resizeSchema, options, 'resizePool');
  validateSize(parsed.size);
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, size } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  return await audited(
    ctx,
    { action: 'vdi pool resize', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const { pool, vms, leases } = await readPool(ctx, namespace, name);
      const taken = new Set((await ctx.cluster.listVms(namespace)).map((vm) => vm.metadata.name ?? ''));
      const plan = planResize({ pool, size, taken });
      const result: ResizePoolResult = {
        id,
        from: pool.members.length,
        size,
        added: [],
        removed: [],
        skipped: [],
      };
      switch (plan.kind) {
        case 'unchanged':
          return result;
        case 'reject':
          throw new VdiError('POOL_IN_USE', plan.message, {
            details: { pool: name, namespace, busy: plan.busy, smallest: plan.smallest },
          });
        case 'grow': {
          const golden = await goldenForGrowth(ctx, namespace, pool, parsed.from);
          const capacity = await requireCapacity(ctx, {
            golden,
            size: plan.add.length,
            namespace,
            members: pool.members.map((member) => member.name),
          });
          await makeMembers(ctx, {
            namespace,
            pool: name,
            members: plan.add,
            golden,
            ephemeral: pool.members.some((member) => member.ephemeral),
            concurrency: parsed.concurrency ?? defaultCloneConcurrency,
            timeoutMs: parsed.cloneTimeoutMs ?? defaultCloneTimeoutMs,
            keepPartial: parsed.keepPartial ?? false,
            signal: parsed.signal,
            doing: `Growing pool "${name}" to ${size}`,
          });
          return { ...result, added: plan.add, capacity };
        }
        case 'shrink': {
          const vmByName = new Map(vms.map((vm) => [vm.metadata.name ?? '', vm]));
          const leaseByName = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
          let done = 0;
          for (const member of plan.remove) {
            // a claim may have landed since the pool was read; its Lease is the truth
            const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
            const vm = vmByName.get(member) as VirtualMachine;
            if (!isClaimable(classifyClaim({ vm, lease, now: ctx.clock.now() }))) {
              result.skipped.push(member);
              continue;
            }
            await ctx.cluster.deleteVm(namespace, member, { uid: vm.metadata.uid ?? '' });
            const stale = lease ?? leaseByName.get(leaseNameFor(member));
            if (stale)
              await ctx.cluster.deleteLease(namespace, stale.metadata.name ?? '', {
                uid: stale.metadata.uid ?? '',
              });
            result.removed.push(member);
            done += 1;
            ctx.events.emit('pool-progress', {
              poolId: id,
              member,
              step: 'removed',
              done,
              total: plan.remove.length,
            });
          }
          return { ...result, size: pool.members.length - result.removed.length };
        }
      }
    },
  );
}
