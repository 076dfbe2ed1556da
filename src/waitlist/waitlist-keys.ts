import type { DesktopKind } from '../desktop-backend.js';
import { shortHash } from '../hash.js';
import { leasePoolLabel, waiterLabel } from '../keys.js';

/** Annotation on a waiter's Lease: when the identity joined the queue (RFC 3339, milliseconds). @category waitlist */
export const enqueuedAtAnnotation = 'corral.dev/vdi-enqueued-at';
/** Prefix of a waiter's Lease name; unlike `corral-vdi-`, it never names a member's claim. @category waitlist */
export const waiterLeaseNamePrefix = 'corral-wait-';
/** How long a waiter's Lease binds without renewal: a waiter whose process died is dropped after this. @category waitlist */
export const waiterLeaseSeconds = 30;
/** How often a waiting claim renews its Lease, on the SDK's clock. @category waitlist */
export const waiterRenewMs = 10_000;

/**
 * The name of the Lease that queues `identity` for a pool: `corral-wait-<kind>-<pool>-<hash of identity>`. A pool
 * name is a DNS label and the hash has a fixed length, so the parts never run into each other.
 *
 * @example
 * ```ts
 * waiterLeaseName('vm', 'devpool', 'alice'); // 'corral-wait-vm-devpool-' + ten characters of [0-9a-z]
 * ```
 * @category waitlist
 */
export function waiterLeaseName(kind: DesktopKind, pool: string, identity: string): string {
  return `${waiterLeaseNamePrefix}${kind}-${pool}-${shortHash(identity)}`;
}

/** The label selector of a pool's waiter Leases. @category waitlist */
export function waitersSelector(pool: string): string {
  return `${leasePoolLabel}=${pool},${waiterLabel}`;
}
