import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { poolLabel, poolSettingsLabel } from '../keys.js';
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
  options: { cached?: boolean } = {},
): Promise<Map<string, PoolSettings>> {
  // every settings ConfigMap carries the pool label too, which lets the pools' ConfigMap cache answer
  const configMaps = await ctx.cluster.listConfigMaps(
    namespace,
    `${poolLabel},${poolSettingsLabel}=true`,
    options,
  );
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
  const configMap = await ctx.cluster.getConfigMap(namespace, poolSettingsName(pool));
  return configMap?.metadata.labels?.[poolSettingsLabel] === 'true' ? configMap : undefined;
}

const conflictAttempts = 5;

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
  for (let attempt = 1; ; attempt += 1) {
    const current = await ctx.cluster.getConfigMap(namespace, poolSettingsName(pool));
    const next = change(poolSettingsOf(current));
    const body = buildPoolSettingsConfigMap(pool, next, current);
    try {
      if (current) await ctx.cluster.replaceConfigMap(namespace, body);
      else await ctx.cluster.createConfigMap(namespace, body);
      return next;
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT') || attempt === conflictAttempts) throw error;
    }
  }
}

/** Deletes a pool's settings ConfigMap, if it has one. */
export async function deletePoolSettings(ctx: VdiContext, namespace: string, pool: string): Promise<void> {
  const current = await readPoolSettingsConfigMap(ctx, namespace, pool);
  if (!current) return;
  await ctx.cluster.deleteConfigMap(namespace, poolSettingsName(pool), {
    uid: current.metadata.uid ?? '',
    resourceVersion: current.metadata.resourceVersion ?? '',
  });
}
