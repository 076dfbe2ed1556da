import { isLeaseExpired } from '../claims/claim-liveness.js';
import type { VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import { leaseKindLabel, leasePoolLabel, waiterLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { enqueuedAtAnnotation, waiterLeaseName, waiterLeaseSeconds } from './waitlist-keys.js';

/** One identity's place in one pool's queue. */
export interface WaiterTarget {
  kind: DesktopKind;
  namespace: string;
  pool: string;
  identity: string;
}

/** The identity's waiter Lease, or `undefined`. */
export async function readWaiterLease(
  ctx: VdiContext,
  target: WaiterTarget,
): Promise<LeaseObject | undefined> {
  const { kind, namespace, pool, identity } = target;
  return await ctx.cluster.getLease(namespace, waiterLeaseName(kind, pool, identity));
}

/**
 * Queues the identity: creates its waiter Lease with the enqueue time (first writer wins), or takes over the live
 * one another call of the same identity wrote, keeping its place. An expired one is replaced, at the back.
 *
 * @throws {@link VdiError} `CONFLICT` when the Lease name belongs to another identity (a hash collision).
 */
export async function enqueueWaiter(ctx: VdiContext, target: WaiterTarget): Promise<LeaseObject> {
  const { kind, namespace, pool, identity } = target;
  const name = waiterLeaseName(kind, pool, identity);
  for (;;) {
    const now = ctx.clock.now();
    const lease: LeaseObject = {
      metadata: {
        name,
        namespace,
        labels: { [leasePoolLabel]: pool, [leaseKindLabel]: kind, [waiterLabel]: shortHash(identity) },
        annotations: { [enqueuedAtAnnotation]: now.toISOString() },
      },
      spec: {
        holderIdentity: identity,
        acquireTime: now.toISOString(),
        renewTime: now.toISOString(),
        leaseDurationSeconds: waiterLeaseSeconds,
      },
    };
    try {
      return await ctx.cluster.createLease(namespace, lease);
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT')) throw error;
    }
    const current = await ctx.cluster.getLease(namespace, name);
    if (current === undefined) continue;
    if (current.spec.holderIdentity !== identity) {
      throw new VdiError(
        'CONFLICT',
        `The waiter Lease "${name}" belongs to another identity; cancel that wait or wait under another login.`,
        { details: { namespace, pool, lease: name } },
      );
    }
    const renewed = await renewWaiterLease(ctx, current);
    if (renewed) return renewed;
  }
}

/**
 * Renews a waiter Lease conditional on the resourceVersion it was read at; a Lease that already expired is
 * given a new enqueue time, as its waiter was dropped meanwhile.
 *
 * @returns the Lease as written, or `undefined` when it changed or went meanwhile.
 */
export async function renewWaiterLease(
  ctx: VdiContext,
  lease: LeaseObject,
): Promise<LeaseObject | undefined> {
  const at = ctx.clock.now();
  const now = at.toISOString();
  const dropped = isLeaseExpired(lease, at);
  try {
    return await ctx.cluster.replaceLease(lease.metadata.namespace ?? '', {
      metadata: {
        ...lease.metadata,
        annotations: {
          ...lease.metadata.annotations,
          ...(dropped ? { [enqueuedAtAnnotation]: now } : {}),
        },
      },
      spec: { ...lease.spec, renewTime: now, ...(dropped ? { acquireTime: now } : {}) },
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}
