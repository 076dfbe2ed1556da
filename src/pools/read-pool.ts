import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
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

/**
 * One VM pool as read now, for a call that serves VM pools only: a name that is a pool of another kind is refused
 * as such, not as a missing pool, with `instead` saying what to do for it.
 *
 * @throws {@link VdiError} `UNSUPPORTED_BACKEND` when the name is a pool of another kind; `POOL_NOT_FOUND`.
 */
export async function readVmPoolFor(
  ctx: VdiContext,
  namespace: string,
  name: string,
  call: { feature: string; instead: string },
) {
  try {
    return await readPool(ctx, namespace, name);
  } catch (error) {
    if (!isVdiError(error, 'POOL_NOT_FOUND')) throw error;
    for (const other of Object.values(ctx.poolKinds)) {
      if (other === undefined || other.kind === 'vm') continue;
      if ((await other.readSettings(ctx, namespace, name)) === undefined) continue;
      throw new VdiError(
        'UNSUPPORTED_BACKEND',
        `Pool "${name}" in namespace "${namespace}" is a ${other.kind} pool, and this call gives only VM pools ${call.feature}; ${call.instead}. Nothing was written.`,
        { details: { pool: name, namespace, kind: other.kind, feature: call.feature } },
      );
    }
    throw error;
  }
}
