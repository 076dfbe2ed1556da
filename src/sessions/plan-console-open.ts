import type { ClaimLiveness } from '../claims/claim-liveness.js';

/**
 * What {@link planConsoleOpen} decides for a console about to open:
 *
 * - `count`: a live claim, also one whose release is under way: until the release has stopped or recreated the
 *   member, the holder keeps the desktop, and a release that fails leaves it theirs.
 * - `uncounted`: a v0.6.0 assignment or a member whose Lease is gone (which only an administrator may open): no
 *   Lease carries marks, so the console opens without starting a grace when it closes.
 * - `reject`: `CLAIM_EXPIRED` or `CLAIM_ENDED`, with the message to throw.
 *
 * @category sessions
 */
export type ConsoleOpenPlan =
  | { kind: 'count' }
  | { kind: 'uncounted' }
  | { kind: 'reject'; code: 'CLAIM_EXPIRED' | 'CLAIM_ENDED'; message: string };

/**
 * Decides whether a console of `desktopId` opens, and whether it counts, from its claim as
 * {@link classifyClaim} reads it.
 *
 * @example
 * ```ts
 * const plan = planConsoleOpen(classifyClaim({ vm, lease, now: clock.now() }), 'vm/corral-vms/devpool-1');
 * ```
 * @category sessions
 */
export function planConsoleOpen(claim: ClaimLiveness, desktopId: string): ConsoleOpenPlan {
  switch (claim.kind) {
    case 'held':
      return { kind: 'count' };
    case 'legacy':
    case 'orphan':
      return { kind: 'uncounted' };
    case 'expired':
      return {
        kind: 'reject',
        code: 'CLAIM_EXPIRED',
        message: `The claim on ${desktopId} expired; claim its pool again before opening a console.`,
      };
    default:
      return {
        kind: 'reject',
        code: 'CLAIM_ENDED',
        message: `Desktop ${desktopId} is not claimed; claim its pool before opening a console.`,
      };
  }
}
