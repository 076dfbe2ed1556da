import { classifyLease } from '../claims/claim-liveness.js';
import { VdiError } from '../errors.js';
import { leaseDurationSeconds } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';

/**
 * What to do with a claim's Lease in a pass: renew it now, leave it until `renewAt`, or leave it alone because
 * it no longer binds (it expired or names no holder), so that renewing would revive a claim that ended.
 *
 * @category sessions
 */
export type RenewalPlan = { kind: 'renew' } | { kind: 'wait'; renewAt: Date } | { kind: 'expired' };

/**
 * Decides whether to renew a claim's Lease at `now`: once `renewIntervalMs` have passed since its `renewTime`
 * (or, never renewed, its `acquireTime`). By default that is a third of its `leaseDurationSeconds`, so a
 * Lease survives two missed renewals.
 *
 * @example
 * ```ts
 * if (planRenewal(lease, clock.now()).kind === 'renew') lease.spec.renewTime = clock.now().toISOString();
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `now` is not a valid date or `renewIntervalMs` is not a positive
 *   whole number of milliseconds.
 * @category sessions
 */
export function planRenewal(lease: LeaseObject, now: Date, renewIntervalMs?: number): RenewalPlan {
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new VdiError(
      'INVALID_INPUT',
      'The time to plan a renewal at is not a valid Date; pass clock.now().',
    );
  }
  if (renewIntervalMs !== undefined && (!Number.isSafeInteger(renewIntervalMs) || renewIntervalMs <= 0)) {
    throw new VdiError(
      'INVALID_INPUT',
      `renewIntervalMs is ${String(renewIntervalMs)}; use a positive whole number of milliseconds.`,
      {
        details: { renewIntervalMs },
      },
    );
  }
  const claim = classifyLease(lease, now);
  if (claim.kind !== 'held') return { kind: 'expired' };
  const { expiresAt } = claim;
  const seconds = lease.spec.leaseDurationSeconds;
  const durationMs = (typeof seconds === 'number' && seconds > 0 ? seconds : leaseDurationSeconds) * 1000;
  // expiresAt is the last renewal plus the duration
  const renewAt = new Date(
    expiresAt.getTime() - durationMs + (renewIntervalMs ?? Math.floor(durationMs / 3)),
  );
  return now.getTime() >= renewAt.getTime() ? { kind: 'renew' } : { kind: 'wait', renewAt };
}
