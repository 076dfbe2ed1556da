import type { PoolFacts, PoolKind } from '../context.js';
import { kindLabel, rolloutKey } from '../ct/ct-keys.js';
import { toCtMemberFacts } from '../ct/ct-member-facts.js';
import {
  ctRolloutOf,
  listCtPoolConfigMaps,
  readCtPool,
  readCtPoolSettingsIn,
  requireCtPool,
  specOf,
  storedCtPoolSettings,
  updateCtPoolConfigMap,
} from '../ct/ct-pool-store.js';
import { leasePoolLabel, poolLabel } from '../keys.js';
import { podKind } from '../kube/resource-kinds.js';
import type { PoolRollout } from '../pool-rollout.js';
import { freeSinceOf } from '../schedules/free-since.js';

/**
 * Container pools: a pool is its spec in the ConfigMap `corral-vdi-ct-<pool>`, which holds its settings, size,
 * spares and schedule too; its members are made by the pool's reconcile, not by the pool calls.
 *
 * @category ct-pools
 */
export const ctPoolKind: PoolKind = {
  kind: 'ct',

  async readSettings(ctx, namespace, pool) {
    const stored = await readCtPool(ctx, namespace, pool);
    return stored && storedCtPoolSettings(stored);
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

  // a container pool's roll-out is its image change, recorded beside its spec (docs/ct-pools.md#image-changes)
  async readPlannedPoolFacts(ctx, namespace, options = {}) {
    const scheduled = (await listCtPoolConfigMaps(ctx, namespace, options)).flatMap((configMap) => {
      try {
        const stored = { spec: specOf(configMap), configMap };
        return stored.spec.schedule || ctRolloutOf(stored) ? [stored] : [];
      } catch {
        return [];
      }
    });
    if (scheduled.length === 0) return new Map();
    const [pods, leases] = await Promise.all([
      ctx.cluster.resource(podKind).in(namespace).list(`${kindLabel}=ct,${poolLabel}`, options),
      ctx.cluster.listLeases(namespace, undefined, options),
    ]);
    const facts = new Map<string, PoolFacts>();
    for (const stored of scheduled) {
      const pool = stored.spec.name;
      const own = pods.filter((pod) => pod.metadata.labels?.[poolLabel] === pool);
      facts.set(pool, {
        members: own.map(toCtMemberFacts),
        leases,
        minReady: stored.spec.minReady,
        marked: new Set(),
        freeSince: freeSinceOf(own),
        fewestMembers: 0,
        warmWhenReady: true,
        settings: storedCtPoolSettings(stored),
      });
    }
    return facts;
  },

  async setRolloutPaused(ctx, namespace, pool, paused) {
    let written: PoolRollout | undefined;
    await updateCtPoolConfigMap(ctx, namespace, pool, (current) => {
      written = undefined;
      const rollout = ctRolloutOf({ spec: specOf(current), configMap: current });
      if (!rollout || rollout.finishedAt) return undefined;
      const { paused: _, ...rest } = rollout;
      written = paused ? { ...rest, paused: true } : rest;
      return { ...current, data: { ...current.data, [rolloutKey]: JSON.stringify(written) } };
    });
    return written;
  },

  async readPoolFacts(ctx, namespace, pool) {
    const stored = await requireCtPool(ctx, namespace, pool);
    const [pods, leases] = await Promise.all([
      ctx.cluster.resource(podKind).in(namespace).list(`${kindLabel}=ct,${poolLabel}=${pool}`),
      ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`),
    ]);
    return {
      members: pods.map(toCtMemberFacts),
      leases,
      minReady: stored.spec.minReady,
      marked: new Set(),
      freeSince: freeSinceOf(pods),
      fewestMembers: 0,
      warmWhenReady: true,
      settings: storedCtPoolSettings(stored),
    };
  },
};
