import { canUsePool, type PoolEntitlement, refusalError } from '../access.js';
import type { EntitlementRequest, PoolClaimLimits, VdiContext } from '../context.js';
import { readCtPool } from '../ct/ct-pool-store.js';
import type { DesktopKind } from '../desktop-backend.js';
import { formatPoolId } from '../ids.js';
import { uncheckedHolderGroups } from '../keys.js';
import type { PoolSettings } from '../pools/pool-settings.js';
import { poolSettingsOf } from '../pools/pool-settings.js';
import { readPoolSettingsConfigMap } from '../pools/pool-settings-store.js';
import { formatHolderGroups } from './holder-entitlement.js';

/**
 * Who may claim from a pool, and under which limits, as stored: a VM pool's settings ConfigMap, a container pool's
 * spec. A pool without either lets everyone, without limits; whether it exists is the claim's to say.
 */
export async function readPoolEntitlement(
  ctx: VdiContext,
  target: { kind: DesktopKind; namespace: string; pool: string },
): Promise<PoolEntitlement & PoolClaimLimits> {
  const { kind, namespace, pool } = target;
  const poolId = formatPoolId({ kind, namespace, pool });
  const settings: PoolSettings | undefined =
    kind === 'ct'
      ? (await readCtPool(ctx, namespace, pool))?.spec
      : poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, pool));
  // 0 is no limit, as a spec may store it
  const limit = settings?.maxDesktopsPerUser || undefined;
  return {
    poolId,
    allowedGroups: settings?.allowedGroups,
    allowedUsers: settings?.allowedUsers,
    ...(limit === undefined ? {} : { maxDesktopsPerUser: limit }),
  };
}

/**
 * The claim path's entitlement hook: reads the pool's allowed groups and users and asks {@link canUsePool}; lets
 * in, it answers the pool's per-user limit from the same read and the groups the claim records.
 *
 * @throws {@link VdiError} `NOT_ENTITLED` naming the pool and what to ask for.
 */
export async function checkPoolEntitlement(
  ctx: VdiContext,
  request: EntitlementRequest,
): Promise<PoolClaimLimits> {
  const { maxDesktopsPerUser, ...pool } = await readPoolEntitlement(ctx, request);
  const decision = canUsePool({ ...request, pool });
  if (decision.kind === 'refused') throw refusalError(decision);
  // an administrator's own claim asked no list, so nothing of it is judged later
  const holderGroups = request.isAdmin
    ? uncheckedHolderGroups
    : formatHolderGroups(request.groups, pool.allowedGroups);
  return { holderGroups, ...(maxDesktopsPerUser === undefined ? {} : { maxDesktopsPerUser }) };
}
