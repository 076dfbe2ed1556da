import type { VdiContext } from '../context.js';
import { readPoolSettingsIn } from '../pools/pool-settings-store.js';
import { describeRollout } from '../rollouts/describe-rollout.js';
import { listVmPoolMembers } from '../vm/vm-backend.js';

/** Where one pool's roll-out under way stands, as the broker's metrics report it. @category metrics */
export interface RolloutCounts {
  namespace: string;
  pool: string;
  /** The golden VM the pool moves to. */
  to: string;
  onTarget: number;
  total: number;
  rebuilding: number;
  /** Claimed members on an older golden VM, waiting for their release or the deadline. */
  waiting: number;
}

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
