import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { poolLabel } from '../keys.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import type { ListOptions } from '../kube/resource.js';
import { configMapKind } from '../kube/resource-kinds.js';
import type { ConfigMapObject } from '../kube-objects.js';
import { defaultMaxUnavailable, type PoolRollout, readPoolRollout } from '../pool-rollout.js';
import { type PoolSettings, readScheduleFailure } from '../pool-settings.js';
import { validatePoolName } from '../validate.js';
import { kindLabel, rolloutKey, scheduleFailureKey, specConfigMapName, specKey } from './ct-keys.js';
import { type CtPoolSpec, ctPoolSettingsOf, parseCtPoolSpec } from './ct-pool-spec.js';
import { imageReferenceProblem } from './image-reference.js';

/** A container pool as stored: its spec and the ConfigMap it lives in. */
export interface StoredCtPool {
  spec: CtPoolSpec;
  configMap: ConfigMapObject;
}

/** The spec a ConfigMap holds, checked again: a ConfigMap edited by hand may no longer be a valid spec. */
export function specOf(configMap: ConfigMapObject): CtPoolSpec {
  const text = configMap.data?.[specKey];
  const where = `ConfigMap ${configMap.metadata.namespace ?? ''}/${configMap.metadata.name ?? ''}`;
  let raw: unknown;
  try {
    raw = JSON.parse(text ?? '');
  } catch (error) {
    throw new VdiError(
      'INVALID_INPUT',
      `${where} has no valid ${specKey}; apply the pool's spec again with "corral-vdi ct-pool apply -f".`,
      { details: { configMap: configMap.metadata.name }, cause: error },
    );
  }
  // a webhook was checked when the spec was applied, with or without http allowed
  return parseCtPoolSpec(raw, { allowLoopbackHttpWebhook: true });
}

/**
 * The pool's image roll-out as stored beside its spec, with the spec's `maxUnavailable` (the spec is what an apply
 * changes); `undefined` when it has had none, or the record was edited into something unreadable.
 */
export function ctRolloutOf(stored: StoredCtPool): PoolRollout | undefined {
  const text = stored.configMap.data?.[rolloutKey];
  if (text === undefined) return undefined;
  try {
    const rollout = readPoolRollout(JSON.parse(text), (to) => imageReferenceProblem(to) === undefined);
    return { ...rollout, maxUnavailable: stored.spec.maxUnavailable ?? defaultMaxUnavailable };
  } catch {
    return undefined;
  }
}

/**
 * A container pool's settings in the shape every pool kind answers: its reclaim and access settings, with a
 * schedule the schedule, its size as the plain size and its reconcile's failures in a row, and its image roll-out.
 */
export function storedCtPoolSettings(stored: StoredCtPool): PoolSettings {
  const { spec, configMap } = stored;
  const failure = spec.schedule && readScheduleFailure(configMap.data?.[scheduleFailureKey]);
  const rollOut = ctRolloutOf(stored);
  return {
    ...ctPoolSettingsOf(spec),
    ...(spec.schedule ? { schedule: spec.schedule, plainSize: spec.size } : {}),
    ...(failure ? { scheduleFailure: failure } : {}),
    ...(rollOut ? { rollOut } : {}),
  };
}

/** Reads one container pool's ConfigMap and spec; `undefined` when there is none. */
export async function readCtPool(
  ctx: VdiContext,
  namespace: string,
  pool: string,
): Promise<StoredCtPool | undefined> {
  validatePoolName(pool);
  const configMap = await ctx.cluster.resource(configMapKind).in(namespace).get(specConfigMapName(pool));
  if (configMap?.metadata.labels?.[kindLabel] !== 'ct') return undefined;
  return { spec: specOf(configMap), configMap };
}

/**
 * Reads one container pool, or says there is none.
 *
 * @throws {@link VdiError} `POOL_NOT_FOUND`.
 */
export async function requireCtPool(ctx: VdiContext, namespace: string, pool: string): Promise<StoredCtPool> {
  const stored = await readCtPool(ctx, namespace, pool);
  if (stored) return stored;
  throw new VdiError(
    'POOL_NOT_FOUND',
    `There is no container pool "${pool}" in namespace "${namespace}"; list them with "corral-vdi ct-pool list", or apply its spec.`,
    { details: { namespace, pool } },
  );
}

/**
 * The ConfigMaps of every container pool of a namespace; with `cached`, from this process's synced watch cache of
 * the pools' ConfigMaps when it runs (as in a broker).
 */
export async function listCtPoolConfigMaps(
  ctx: VdiContext,
  namespace: string,
  options: Pick<ListOptions, 'cached' | 'shared'> = {},
): Promise<ConfigMapObject[]> {
  return await ctx.cluster
    .resource(configMapKind)
    .in(namespace)
    .list(`${kindLabel}=ct,${poolLabel}`, options);
}

/** The names of the container pools of a namespace: from this process's watch caches when it runs them. */
export async function listCtPoolNames(ctx: VdiContext, namespace: string): Promise<string[]> {
  const configMaps = await listCtPoolConfigMaps(ctx, namespace, { cached: ctx.cluster.isCaching(namespace) });
  return configMaps.map((configMap) => configMap.metadata.labels?.[poolLabel] ?? '').sort();
}

/**
 * The reclaim settings of every container pool of a namespace, by pool name. A spec edited by hand into something
 * invalid counts as no settings, as an unreadable VM pool setting does, so a reclaim pass never stops on it.
 */
export async function readCtPoolSettingsIn(
  ctx: VdiContext,
  namespace: string,
  options: { cached?: boolean } = {},
): Promise<Map<string, PoolSettings>> {
  const settings = new Map<string, PoolSettings>();
  for (const configMap of await listCtPoolConfigMaps(ctx, namespace, options)) {
    const pool = configMap.metadata.labels?.[poolLabel] ?? '';
    try {
      settings.set(pool, storedCtPoolSettings({ spec: specOf(configMap), configMap }));
    } catch {
      settings.set(pool, {});
    }
  }
  return settings;
}

/**
 * The ConfigMap that stores `spec`, to create, or to replace `current` with its resourceVersion; the roll-out
 * record stays (its journal names the members being replaced, whatever the spec says). Pure.
 */
export function buildSpecConfigMap(spec: CtPoolSpec, current: ConfigMapObject | undefined): ConfigMapObject {
  const rollout = current?.data?.[rolloutKey];
  return {
    metadata: {
      name: specConfigMapName(spec.name),
      labels: { [poolLabel]: spec.name, [kindLabel]: 'ct' },
      ...(current ? { resourceVersion: current.metadata.resourceVersion } : {}),
    },
    data: {
      [specKey]: `${JSON.stringify(spec, null, 2)}\n`,
      ...(rollout === undefined ? {} : { [rolloutKey]: rollout }),
    },
  };
}

/**
 * Changes what a container pool's ConfigMap holds beside its spec, read and written again on a conflict, so a spec
 * applied meanwhile stays; `change` answers `undefined` to leave it. A ConfigMap that is not a container pool's is left.
 */
export async function updateCtPoolConfigMap(
  ctx: VdiContext,
  namespace: string,
  pool: string,
  change: (current: ConfigMapObject) => ConfigMapObject | undefined,
): Promise<void> {
  await readModifyWrite(
    ctx.cluster.resource(configMapKind).in(namespace),
    specConfigMapName(pool),
    (current) => (current?.metadata.labels?.[kindLabel] === 'ct' ? change(current) : undefined),
  );
}
