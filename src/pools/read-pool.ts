import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { poolLabel } from '../keys.js';
import type { ListOptions } from '../kube/cluster.js';
import { describePools } from './pool-view.js';

/**
 * The pools of one namespace, or the one named `pool`, as {@link describePools} reads them now, or from this
 * process's watch caches with `cached`.
 */
export async function readPools(
  ctx: VdiContext,
  namespace: string,
  pool?: string,
  options: ListOptions = {},
) {
  const [vms, leases] = await Promise.all([
    ctx.cluster.listVms(namespace, pool === undefined ? poolLabel : `${poolLabel}=${pool}`, options),
    ctx.cluster.listLeases(namespace, undefined, options),
  ]);
  return { pools: describePools({ namespace, vms, leases, now: ctx.clock.now() }), vms, leases };
}

/**
 * One pool as read now, with the member objects and Leases it was read from.
 *
 * @throws {@link VdiError} `POOL_NOT_FOUND` when no member of the namespace carries the pool label.
 */
export async function readPool(ctx: VdiContext, namespace: string, name: string) {
  const { pools, vms, leases } = await readPools(ctx, namespace, name);
  const [pool] = pools;
  if (!pool) {
    throw new VdiError(
      'POOL_NOT_FOUND',
      `Pool "${name}" has no members in namespace "${namespace}"; check the name and the namespace.`,
      { details: { pool: name, namespace } },
    );
  }
  return { pool, vms, leases };
}
