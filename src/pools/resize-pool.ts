import { z } from 'zod';
import type { AdmissionPlan } from '../capacity/admit-pool.js';
import { isLeaseExpired } from '../claims/claim-liveness.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { dropLeftoverRemovals, takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { leasePoolLabel, poolLabel, removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { defaultPoolActor, makeOptionsSchema, maxPoolSize, validateSize } from '../pool-options.js';
import { poolSettingsOf } from '../pool-settings.js';
import { readMinReady } from '../spares/min-ready.js';
import { writeMinReady } from '../spares/spare-writes.js';
import { goldenNameSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import type { PoolOptions } from './list-pools.js';
import { makeMembers } from './make-members.js';
import { memberFactoryFor } from './member-factory-for.js';
import { planMemberRemoval, planResize, type ResizePlan } from './plan-resize.js';
import type { PoolMemberFactory } from './pool-member-factory.js';
import { readPoolSettingsConfigMap } from './pool-settings-store.js';
import { readPool } from './read-pool.js';
import { runAudited } from './run-audited.js';

/** Options of {@link resizePool}. @category pools */
export interface ResizePoolOptions extends PoolOptions {
  /** The number of members wanted, 1 to {@link maxPoolSize}. */
  size: number;
  /** The golden VM for new members; needed only when the members do not record theirs and no roll-out names one. */
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

const resizeSchema = z.object({
  name: poolNameSchema,
  size: z.number(),
  from: goldenNameSchema.optional(),
  ...makeOptionsSchema,
});

type Parsed = z.infer<typeof resizeSchema>;
type PoolRead = Awaited<ReturnType<typeof readPool>>;

/**
 * Resizes a pool to `size` members. Growing clones the lowest free indices from the golden VM the members record
 * (or `from`), with the same capacity admission as a create: the new members and every member not running now
 * must fit at once. Shrinking removes only free members, highest index first, and never a claimed one: when too
 * few are free, it refuses before removing anything and says how far the pool can shrink. Each member's Lease is
 * taken (holder `corral-vdi/resize`) before the member is deleted, then deleted; a member claimed before its
 * Lease is taken is skipped and stays. {@link planResize} makes every one of these choices.
 *
 * @example
 * ```ts
 * await resizePool(vdi.context, { name: 'devpool', size: 5 });
 * ```
 * New members carry the pool's `minReady`; a size below it is refused.
 *
 * @throws {@link VdiError} `INVALID_INPUT` (also a size below the pool's `minReady`); `POOL_NOT_FOUND`; `GOLDEN_NOT_FOUND`; `INSUFFICIENT_CAPACITY`;
 *   `POOL_IN_USE` when too few members are free to shrink; `CLONE_FAILED`, `CLONE_TIMEOUT` while growing.
 * @category pools
 */
export async function resizePool(ctx: VdiContext, options: ResizePoolOptions): Promise<ResizePoolResult> {
  const parsed = parseOptions(resizeSchema, options, 'resizePool');
  validateSize(parsed.size);
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name, size } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const factory = memberFactoryFor(ctx);
  return await runAudited(
    ctx,
    { action: 'vdi pool resize', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const read = await readPool(ctx, namespace, name);
      const minReady = readMinReady(read.vms);
      if (minReady !== undefined && size < minReady) throw belowMinReady(id, size, minReady);
      await dropLeftoverRemovals(ctx, {
        pool: name,
        members: read.vms.map((vm) => vm.metadata.name ?? ''),
        leases: read.leases,
      });
      const objects = await factory.listTakenNames(namespace);
      const claimed = claimedNames(read.leases, ctx.clock.now());
      const taken = new Set([...objects, ...claimed.keys()]);
      // judged on the VMs read with the Leases: a recreate's clone may make the VM again before the later list
      const listed = new Set(read.vms.map((vm) => vm.metadata.name ?? ''));
      const resetting = [...claimed]
        .filter(([member, lease]) => isResetting(lease, name, member, listed))
        .map(([member]) => member);
      // a pool moving to a new golden VM grows from that one
      const rollTo = poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, name)).rollOut?.to;
      const plan = planResize({ pool: read.pool, size, taken, resetting, source: parsed.from ?? rollTo });
      const result: ResizePoolResult = {
        id,
        from: read.pool.members.length,
        size,
        added: [],
        removed: [],
        skipped: [],
      };
      switch (plan.kind) {
        case 'unchanged':
          return result;
        case 'reject': {
          const details =
            plan.code === 'POOL_IN_USE'
              ? { busy: plan.busy, smallest: plan.smallest }
              : { sources: plan.sources };
          throw new VdiError(plan.code, plan.message, { details: { pool: name, namespace, ...details } });
        }
        case 'grow': {
          const grown = await grow(factory, plan, read, parsed);
          if (minReady !== undefined) {
            const added = new Set(grown.added);
            const vms = await ctx.cluster.listVms(namespace, `${poolLabel}=${name}`);
            await writeMinReady(
              ctx,
              vms.filter((vm) => added.has(vm.metadata.name ?? '')),
              minReady,
            );
          }
          return { ...result, ...grown };
        }
        case 'shrink':
          return await shrink(ctx, factory, plan.remove, read, result);
      }
    },
  );
}

function belowMinReady(id: string, size: number, minReady: number): VdiError {
  return new VdiError(
    'INVALID_INPUT',
    `Pool ${id} keeps ${minReady} spares (minReady), more than the ${size} members asked for; lower minReady first ("corral-vdi pool set --min-ready"). Nothing was changed.`,
    { details: { size, minReady, field: 'size' } },
  );
}

// the members live claim Leases hold, whatever their pool: a grow takes none of their names
function claimedNames(leases: readonly LeaseObject[], now: Date): Map<string, LeaseObject> {
  const claimed = new Map<string, LeaseObject>();
  for (const lease of leases) {
    const member = memberFromLeaseName(lease.metadata.name ?? '');
    if (member && lease.spec.holderIdentity && !isLeaseExpired(lease, now)) claimed.set(member, lease);
  }
  return claimed;
}

// a claim of this pool whose member object is gone: a release is making it again, so it is still a member
function isResetting(
  lease: LeaseObject,
  pool: string,
  member: string,
  objects: ReadonlySet<string>,
): boolean {
  return (
    lease.metadata.labels?.[leasePoolLabel] === pool &&
    lease.spec.holderIdentity !== removalHolder &&
    !objects.has(member)
  );
}

async function grow(
  factory: PoolMemberFactory,
  plan: Extract<ResizePlan, { kind: 'grow' }>,
  read: PoolRead,
  parsed: Parsed,
): Promise<Pick<ResizePoolResult, 'added' | 'capacity'>> {
  const { namespace } = read.pool;
  const source = await factory.readSource(namespace, plan.source);
  const capacity = await source.admit({
    size: plan.add.length,
    members: read.pool.members.map((member) => member.name),
  });
  await makeMembers(factory, source, {
    namespace,
    pool: read.pool.name,
    members: plan.add,
    ephemeral: plan.ephemeral,
    concurrency: parsed.concurrency,
    timeoutMs: parsed.cloneTimeoutMs,
    keepPartial: parsed.keepPartial,
    signal: parsed.signal,
    doing: `Growing pool "${read.pool.name}" to ${plan.size}`,
  });
  return { added: plan.add, capacity };
}

async function shrink(
  ctx: VdiContext,
  factory: PoolMemberFactory,
  remove: string[],
  read: PoolRead,
  result: ResizePoolResult,
): Promise<ResizePoolResult> {
  const { namespace } = read.pool;
  const vmByName = new Map(read.vms.map((vm) => [vm.metadata.name ?? '', vm]));
  const leaseByName = new Map(read.leases.map((lease) => [lease.metadata.name ?? '', lease]));
  for (const member of remove) {
    const vm = vmByName.get(member);
    if (!vm) continue;
    const lease = leaseByName.get(leaseNameFor(member));
    // The member's Lease is taken before the member goes, so a claim landing meanwhile keeps its desktop.
    const taken =
      planMemberRemoval({ vm, lease, now: ctx.clock.now() }).kind === 'remove'
        ? await takeRemovalLease(ctx, { namespace, pool: read.pool.name, member }, lease)
        : undefined;
    if (!taken) {
      result.skipped.push(member);
      continue;
    }
    await factory.deleteMember({ namespace, member, uid: vm.metadata.uid ?? '' });
    await deleteLeaseAsRead(ctx, taken);
    result.removed.push(member);
    ctx.events.emit('pool-progress', {
      poolId: result.id,
      member,
      step: 'removed',
      done: result.removed.length,
      total: remove.length,
    });
  }
  return { ...result, size: read.pool.members.length - result.removed.length };
}
