import { backendFor, type PoolKind } from '../context.js';
import { ctPoolSettingsOf } from '../ct/ct-pool-spec.js';
import {
  listCtPoolConfigMaps,
  readCtPool,
  readCtPoolSettingsIn,
  requireCtPool,
  specOf,
} from '../ct/ct-pool-store.js';
import { leasePoolLabel, poolLabel } from '../keys.js';

/**
 * Container pools: a pool is its spec in the ConfigMap `corral-vdi-ct-<pool>`, which holds its settings, size and
 * spares too; its members are made by the pool's reconcile, not by the pool calls.
 *
 * @category ct-pools
 */
export const ctPoolKind: PoolKind = {
  kind: 'ct',

  async readSettings(ctx, namespace, pool) {
    const stored = await readCtPool(ctx, namespace, pool);
    return stored && ctPoolSettingsOf(stored.spec);
  },

  readSettingsIn: (ctx, namespace, options) => readCtPoolSettingsIn(ctx, namespace, options),

  async readDeclaredSizes(ctx, namespace, options) {
    const sizes = new Map<string, number | undefined>();
    for (const configMap of await listCtPoolConfigMaps(ctx, namespace, options)) {
      try {
        const spec = specOf(configMap);
        sizes.set(spec.name, spec.size);
      } catch {
        // a ConfigMap edited into an invalid spec has no size to report; its members still count
        sizes.set(configMap.metadata.labels?.[poolLabel] ?? '', undefined);
      }
    }
    return sizes;
  },

  // a container pool's spec carries neither a schedule nor a roll-out (docs/ct-pools.md)
  readPlannedPoolFacts: async () => new Map(),

  async readPoolFacts(ctx, namespace, pool) {
    const stored = await requireCtPool(ctx, namespace, pool);
    const [members, leases] = await Promise.all([
      backendFor(ctx, 'ct').listMembers(namespace, pool),
      ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`),
    ]);
    return {
      members,
      leases,
      minReady: stored.spec.minReady,
      marked: new Set(),
      settings: ctPoolSettingsOf(stored.spec),
    };
  },
};
