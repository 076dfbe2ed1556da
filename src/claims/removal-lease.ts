import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { leaseMemberLabel, leasePoolLabel, removalHolder, removalLeaseDurationSeconds } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { isValidLabelValue } from '../sanitize-label-value.js';
import { deleteLeaseAsRead } from './lease-writes.js';

/** The member a removal is for. */
export interface RemovalTarget {
  namespace: string;
  pool: string;
  member: string;
}

/**
 * Takes a member's claim Lease for its removal, holder `corral-vdi/resize`: creates it (first writer wins) when
 * the pool was read without one, or replaces the removable one read, conditional on its resourceVersion.
 *
 * @returns the Lease as written, or `undefined` when a claim (or another removal) wrote it first.
 */
export async function takeRemovalLease(
  ctx: VdiContext,
  target: RemovalTarget,
  read: LeaseObject | undefined,
): Promise<LeaseObject | undefined> {
  const { namespace, pool, member } = target;
  const now = ctx.clock.now().toISOString();
  const lease: LeaseObject = {
    metadata: {
      name: leaseNameFor(member),
      namespace,
      labels: {
        [leasePoolLabel]: pool,
        ...(isValidLabelValue(member) ? { [leaseMemberLabel]: member } : {}),
      },
      ...(read ? { resourceVersion: read.metadata.resourceVersion } : {}),
    },
    spec: {
      holderIdentity: removalHolder,
      acquireTime: now,
      renewTime: now,
      leaseDurationSeconds: removalLeaseDurationSeconds,
      ...(read ? { leaseTransitions: (read.spec.leaseTransitions ?? 0) + 1 } : {}),
    },
  };
  try {
    if (read === undefined) return await ctx.cluster.createLease(namespace, lease);
    return await ctx.cluster.replaceLease(namespace, lease);
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Deletes the removal Leases of `pool` whose member is gone: what a removal that died after deleting its member
 * left behind, which would otherwise hold a member recreated under the same name.
 */
export async function dropLeftoverRemovals(
  ctx: VdiContext,
  read: { pool: string; members: readonly string[]; leases: readonly LeaseObject[] },
): Promise<void> {
  const members = new Set(read.members);
  for (const lease of read.leases) {
    const labels = lease.metadata.labels ?? {};
    const member = labels[leaseMemberLabel];
    if (lease.spec.holderIdentity !== removalHolder || labels[leasePoolLabel] !== read.pool) continue;
    if (member !== undefined && !members.has(member)) await deleteLeaseAsRead(ctx, lease);
  }
}
