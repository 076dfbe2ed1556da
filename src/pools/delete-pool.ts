import { z } from 'zod';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { dropLeftoverRemovals, takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import { leasePoolLabel, removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { defaultPoolActor } from '../pool-options.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import type { PoolOptions } from './list-pools.js';
import { memberFactoryFor } from './member-factory-for.js';
import { planPoolDelete } from './plan-pool-delete.js';
import { planMemberRemoval } from './plan-resize.js';
import { deletePoolSettings } from './pool-settings-store.js';
import { readPool } from './read-pool.js';
import { runAudited } from './run-audited.js';

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
  /** How many claim Leases, and clone objects and staged VMs of member recreates, went with them. */
  leases: number;
  clones: number;
  /** Claimed members were deleted because of `force`. */
  forced: boolean;
}

const deleteSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  force: z.boolean().optional(),
  identity: identitySchema.optional(),
});
const deleteConcurrency = 8;

function claimedMeanwhile(pool: string, namespace: string, claimed: string[], named: string[]): VdiError {
  return new VdiError(
    'POOL_IN_USE',
    `Pool "${pool}" had members claimed while it was being deleted: ${named.join(', ')}. Nothing was deleted. Release them first, or delete with force (an administrator's action, recorded in the audit log).`,
    { details: { pool, namespace, claimed } },
  );
}

/**
 * Deletes a pool: takes every free member's claim Lease (holder `corral-vdi/resize`), then deletes its clone
 * objects (so none produces a member afterwards), then its member VMs and their claim Leases. While members are
 * claimed (or assigned by v0.6.0), or one is claimed before its Lease is taken, it refuses and gives back the
 * Leases it took, unless `force`, which is recorded as `vdi pool force-delete`.
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
  const factory = memberFactoryFor(ctx);
  return await runAudited(
    ctx,
    {
      action: force ? 'vdi pool force-delete' : 'vdi pool delete',
      user: parsed.identity ?? defaultPoolActor,
      target: id,
    },
    async () => {
      const pending = await factory.listPending(namespace, name);
      let read: Awaited<ReturnType<typeof readPool>> | undefined;
      let leftovers: LeaseObject[] = [];
      try {
        read = await readPool(ctx, namespace, name);
      } catch (error) {
        if (!isVdiError(error, 'POOL_NOT_FOUND')) throw error;
        // a removal that died after deleting the last member leaves only its Leases, which this delete finishes
        leftovers = (await ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${name}`)).filter(
          (lease) => lease.spec.holderIdentity === removalHolder,
        );
        if (pending.length === 0 && leftovers.length === 0) throw error;
      }
      const plan = planPoolDelete({ pool: name, members: read?.pool.members ?? [], force });
      if (plan.kind === 'reject') {
        throw new VdiError(plan.code, plan.message, {
          details: { pool: name, namespace, claimed: plan.claimed },
        });
      }
      const { members } = plan;
      const vms = new Map((read?.vms ?? []).map((vm) => [vm.metadata.name ?? '', vm]));
      const leases = new Map((read?.leases ?? []).map((lease) => [lease.metadata.name ?? '', lease]));
      // Every member's Lease is taken before anything is deleted, so a claim landing meanwhile is refused or kept.
      const taken = new Map<string, LeaseObject>();
      const lost: string[] = [];
      await forEachBounded(members, deleteConcurrency, async (member) => {
        const vm = vms.get(member);
        const lease = leases.get(leaseNameFor(member));
        const removable = vm && planMemberRemoval({ vm, lease, now: ctx.clock.now() }).kind === 'remove';
        const written = removable
          ? await takeRemovalLease(ctx, { namespace, pool: name, member }, lease)
          : undefined;
        if (written) taken.set(member, written);
        // unforced, a member that cannot be taken is in use, also one the pool's read showed as being deleted
        else if (removable || !force) lost.push(member);
      });
      if (lost.length > 0 && !force) {
        for (const lease of taken.values()) await deleteLeaseAsRead(ctx, lease);
        const named = await Promise.all(
          lost.map(async (member) => {
            const holder = (await ctx.cluster.getLease(namespace, leaseNameFor(member)))?.spec.holderIdentity;
            return holder ? `${member} (${holder})` : member;
          }),
        );
        throw claimedMeanwhile(name, namespace, lost, named);
      }
      // settings first: a delete that stops after it leaves members with the default settings, not settings without a pool
      await deletePoolSettings(ctx, namespace, name);
      for (const clone of pending) await factory.deletePending(namespace, clone);
      await dropLeftoverRemovals(ctx, {
        pool: name,
        members: read?.vms.map((vm) => vm.metadata.name ?? '') ?? [],
        leases: read?.leases ?? leftovers,
      });
      let leaseCount = 0;
      let done = 0;
      await forEachBounded(members, deleteConcurrency, async (member) => {
        await factory.deleteMember({ namespace, member, uid: vms.get(member)?.metadata.uid ?? '' });
        const removal = taken.get(member);
        // forced: a claim read, or one that landed since, goes with its member
        const lease =
          removal === undefined && lost.includes(member)
            ? await ctx.cluster.getLease(namespace, leaseNameFor(member))
            : leases.get(leaseNameFor(member));
        if (removal) {
          await deleteLeaseAsRead(ctx, removal);
        } else if (
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
          member,
          step: 'removed',
          done,
          total: members.length,
        });
      });
      return {
        id,
        members,
        leases: leaseCount,
        clones: pending.length,
        forced: plan.forced,
      };
    },
    (result) => (result.forced ? 'vdi pool force-delete' : 'vdi pool delete'),
  );
}
