import { canUsePool, type PoolEntitlement, refusalError } from '../claims/access.js';
import {
  type ClaimPolicy,
  type EntitlementRequest,
  type PoolClaimLimits,
  poolKindFor,
  type VdiContext,
} from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { isVdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { holderGroupsAnnotation, uncheckedHolderGroups } from '../keys.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import type { LeaseObject } from '../kube-objects.js';
import { formatHolderGroups, readHolderRecord } from './holder-entitlement.js';

/**
 * Who may claim from a pool, and under which limits, as its kind stores them (a VM pool's settings ConfigMap, a
 * container pool's spec). A pool without either lets everyone, without limits; whether it exists is the claim's to
 * say.
 */
export async function readPoolEntitlement(
  ctx: VdiContext,
  target: { kind: DesktopKind; namespace: string; pool: string },
): Promise<PoolEntitlement & PoolClaimLimits> {
  const { kind, namespace, pool } = target;
  const poolId = formatPoolId({ kind, namespace, pool });
  const settings = await poolKindFor(ctx, kind).readSettings(ctx, namespace, pool);
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
 * The claim policy's admission ({@link ClaimPolicy.admit}): reads the pool's allowed groups and users and asks {@link canUsePool}; lets
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

/**
 * Whether the holder of a claimed desktop may still use it (open a console, connect, start it): the pool's lists
 * judge the groups the holder comes with now, through the claim policy's admission as a claim is judged. An administrator
 * and the holder of an unchecked claim (an assign, an operator's claim) always may. On the way, the groups the claim
 * records are brought up to the holder's current ones when they changed, so that the session engine judges what the
 * identity provider says now; a claim that changed meanwhile is recorded at the holder's next request.
 *
 * @throws {@link VdiError} `NOT_ENTITLED` naming the pool and what to ask for.
 */
export async function checkHolderEntitlement(
  ctx: VdiContext,
  request: EntitlementRequest & { lease: LeaseObject | undefined },
): Promise<void> {
  const { lease, ...asked } = request;
  if (asked.isAdmin || readHolderRecord(lease).kind === 'unchecked') return;
  let recorded: string;
  try {
    recorded = (await ctx.claimPolicy.admit(ctx, asked)).holderGroups ?? formatHolderGroups(asked.groups);
  } catch (error) {
    if (isVdiError(error, 'NOT_ENTITLED'))
      await recordHolderGroups(ctx, lease, asked.identity, formatHolderGroups(asked.groups));
    throw error;
  }
  await recordHolderGroups(ctx, lease, asked.identity, recorded);
}

// one write, only when the record changes: conditional on the Lease as read
async function recordHolderGroups(
  ctx: VdiContext,
  lease: LeaseObject | undefined,
  identity: string,
  value: string,
): Promise<void> {
  if (!lease) return;
  const recorded = (current: LeaseObject | undefined) => {
    if (current?.spec.holderIdentity !== identity) return undefined;
    if (current.metadata.annotations?.[holderGroupsAnnotation] === value) return undefined;
    const annotations = { ...current.metadata.annotations, [holderGroupsAnnotation]: value };
    return { ...current, metadata: { ...current.metadata, annotations } };
  };
  try {
    const leases = ctx.cluster.leasesIn(lease.metadata.namespace ?? '');
    await readModifyWrite(leases, lease.metadata.name ?? '', recorded, {
      known: { object: lease },
      attempts: 1,
    });
  } catch (error) {
    if (!isVdiError(error, 'CONFLICT', 'NOT_FOUND')) throw error;
  }
}
