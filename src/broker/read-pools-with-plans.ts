import type { VdiContext } from '../context.js';
import { type newSharedReads, type PlannedPool, readPoolPlans } from '../pool-status/read-pool-plans.js';
import { readPoolViews } from '../pools/list-pools.js';
import type { PoolView } from '../pools/pool-view.js';

/**
 * The VM pools of the namespaces as `listPools` shows them, and where every pool's schedule and roll-out stand, from
 * one read of each list both need (the settings, the VMs and the Leases), and of each list already in `shared`; each
 * namespace from this process's watch caches when it runs them.
 *
 * @throws {@link VdiError} what the adapter throws for a failed list.
 */
export async function readPoolsWithPlans(
  ctx: VdiContext,
  namespaces: readonly string[],
  shared: ReturnType<typeof newSharedReads>,
): Promise<{ pools: PoolView[]; plans: PlannedPool[] }> {
  const [pools, plans] = await Promise.all([
    readPoolViews(ctx, namespaces, { shared }),
    Promise.all(
      namespaces.map((namespace) =>
        readPoolPlans(ctx, [namespace], { cached: ctx.cluster.isCaching(namespace), shared }),
      ),
    ),
  ]);
  return { pools, plans: plans.flat() };
}
