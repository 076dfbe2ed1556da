import { z } from 'zod';
import type { VdiContext } from '../context.js';
import type { ListOptions } from '../kube/cluster.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { readPoolSettingsIn } from './pool-settings-store.js';
import { describePools, type PoolView } from './pool-view.js';
import { readPool, readPools } from './read-pool.js';

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

const listSchema = z.object({ namespaces: z.array(namespaceSchema).optional() });
const poolSchema = z.object({ name: poolNameSchema, namespace: namespaceSchema.optional() });

/**
 * Lists the pools of the given namespaces, read back from the `corral.dev/vdi-pool` label of their VMs: each
 * member in natural order (`-2` before `-10`) with who has it (free, claimed by whom and since when, or a
 * v0.6.0 assignment) and its power state, and the pool's reclaim action and own settings (its ConfigMap
 * `corral-vdi-pool-<pool>`). `kubectl get vm -l corral.dev/vdi-pool` shows the same members. A namespace whose
 * watch caches this process started (`vdi.startCaches`, as `broker serve` does) is read from them.
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
  return await readPoolViews(ctx, (parsed.namespaces ?? [ctx.defaultNamespace]).map(validateNamespace));
}

/**
 * What {@link listPools} answers for namespaces already checked; with `shared`, its lists are shared with the other
 * reads of the same request.
 */
export async function readPoolViews(
  ctx: VdiContext,
  namespaces: readonly string[],
  options: Pick<ListOptions, 'shared'> = {},
): Promise<PoolView[]> {
  const read = await Promise.all(
    namespaces.map(async (namespace) => {
      // a broker's caches answer it: read afresh, each Desktops page read every VM and Lease it serves from etcd
      const listOptions = { cached: ctx.cluster.isCaching(namespace), shared: options.shared };
      const [{ vms, leases }, settings] = await Promise.all([
        readPools(ctx, namespace, undefined, listOptions),
        readPoolSettingsIn(ctx, namespace, listOptions),
      ]);
      return describePools({ namespace, vms, leases, now: ctx.clock.now(), settings });
    }),
  );
  return read.flat();
}

/**
 * One pool, as {@link listPools} shows it.
 *
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when no VM of the namespace carries the pool label.
 * @category pools
 */
export async function getPool(ctx: VdiContext, options: PoolOptions): Promise<PoolView> {
  const parsed = parseOptions(poolSchema, options, 'getPool');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const [{ vms, leases }, settings] = await Promise.all([
    readPool(ctx, namespace, parsed.name),
    readPoolSettingsIn(ctx, namespace),
  ]);
  const [pool] = describePools({ namespace, vms, leases, now: ctx.clock.now(), settings });
  return pool as PoolView;
}
