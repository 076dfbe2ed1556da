import type { VdiContext } from '../context.js';
import { poolLabel, poolSettingsLabel } from '../keys.js';
import type { ListOptions } from '../kube/cluster.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import { configMapKind } from '../kube/resource-kinds.js';
import type { ConfigMapObject } from '../kube-objects.js';
import {
  buildPoolSettingsConfigMap,
  type PoolSettings,
  poolSettingsName,
  poolSettingsOf,
} from '../pool-settings.js';

/**
 * The settings of every pool of a namespace that has its own, by pool name; with `cached`, from this process's
 * synced watch cache of the pools' ConfigMaps when it runs (as in a broker).
 */
export async function readPoolSettingsIn(
  ctx: VdiContext,
  namespace: string,
  options: ListOptions = {},
): Promise<Map<string, PoolSettings>> {
  // every settings ConfigMap carries the pool label too, which lets the pools' ConfigMap cache answer
  const configMaps = await ctx.cluster
    .resource(configMapKind)
    .in(namespace)
    .list(`${poolLabel},${poolSettingsLabel}=true`, options);
  return new Map(
    configMaps.map((configMap) => [
      configMap.metadata.name?.slice(poolSettingsName('').length) ?? '',
      poolSettingsOf(configMap),
    ]),
  );
}

/** Reads one pool's settings ConfigMap; `undefined` when the pool has none. */
export async function readPoolSettingsConfigMap(
  ctx: VdiContext,
  namespace: string,
  pool: string,
): Promise<ConfigMapObject | undefined> {
  const configMap = await ctx.cluster.resource(configMapKind).in(namespace).get(poolSettingsName(pool));
  return configMap?.metadata.labels?.[poolSettingsLabel] === 'true' ? configMap : undefined;
}

/**
 * Writes a pool's settings as one ConfigMap write: `change` gets the stored settings (none for a new pool) and
 * returns the new ones. A concurrent write makes it read and change again.
 */
export async function writePoolSettings(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  change: (stored: PoolSettings) => PoolSettings,
): Promise<PoolSettings> {
  let next: PoolSettings | undefined;
  const configMaps = ctx.cluster.resource(configMapKind).in(namespace);
  await readModifyWrite(configMaps, poolSettingsName(pool), (current) => {
    next = change(poolSettingsOf(current));
    return buildPoolSettingsConfigMap(pool, next, current);
  });
  return next as PoolSettings;
}

/** Deletes a pool's settings ConfigMap, if it has one. */
export async function deletePoolSettings(ctx: VdiContext, namespace: string, pool: string): Promise<void> {
  const current = await readPoolSettingsConfigMap(ctx, namespace, pool);
  if (!current) return;
  await ctx.cluster
    .resource(configMapKind)
    .in(namespace)
    .delete(poolSettingsName(pool), {
      preconditions: {
        uid: current.metadata.uid ?? '',
        resourceVersion: current.metadata.resourceVersion ?? '',
      },
      propagationPolicy: 'Background',
    });
}
