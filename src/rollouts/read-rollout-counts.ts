import type { VdiContext } from '../context.js';
import type { RolloutCounts } from '../metrics/broker-metrics.js';
import { readPoolSettingsIn } from '../pools/pool-settings-store.js';
import { listVmPoolMembers } from '../vm/vm-backend.js';
import { describeRollout } from './describe-rollout.js';

/**
 * Reads the roll-outs under way in the namespaces, from this process's watch caches when it runs them: the pools'
 * settings, and the members and Leases of each pool with a roll-out.
 *
 * @throws {@link VdiError} what the adapter throws for a failed list.
 */
export async function readRolloutCounts(
  ctx: VdiContext,
  namespaces: readonly string[],
): Promise<RolloutCounts[]> {
  const how = { cached: true };
  const read = await Promise.all(
    namespaces.map(async (namespace) => {
      const settings = await readPoolSettingsIn(ctx, namespace, how);
      const underway = [...settings].filter(([, own]) => own.rollOut && !own.rollOut.finishedAt);
      if (underway.length === 0) return [];
      const leases = await ctx.cluster.listLeases(namespace, undefined, how);
      return await Promise.all(
        underway.map(async ([pool, own]) => {
          const { members } = await listVmPoolMembers(ctx.cluster, namespace, pool, how);
          const status = describeRollout({
            rollout: own.rollOut!,
            members,
            leases,
            buffer: 0,
            now: ctx.clock.now(),
          });
          return {
            namespace,
            pool,
            to: status.to,
            onTarget: status.onTarget,
            total: status.total,
            rebuilding: status.rebuilding.length,
            waiting: status.claimed.length,
          };
        }),
      );
    }),
  );
  return read.flat();
}
