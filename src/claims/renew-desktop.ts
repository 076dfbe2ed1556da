import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { renewClaimLease } from './lease-writes.js';
import { type MemberOptions, readHeldMember } from './read-held-member.js';

/**
 * Renews the caller's claim for another Lease duration.
 *
 * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `CLAIM_CHANGED`.
 */
export async function renewDesktop(ctx: VdiContext, options: MemberOptions): Promise<DesktopView> {
  const { facts, lease } = await readHeldMember(ctx, options, 'renew');
  const { desktopId } = facts;
  // an administrator passes the start rule for a v0.6.0 or Lease-less member, but there is nothing to renew
  if (lease === undefined) {
    throw new VdiError('CLAIM_ENDED', `${desktopId} has no claim Lease to renew; claim its pool first.`, {
      details: { desktopId },
    });
  }
  const renewed = await renewClaimLease(ctx, lease);
  if (renewed) return describeDesktop(facts, renewed);
  throw new VdiError(
    'CLAIM_CHANGED',
    `The claim on ${desktopId} changed while renewing; read the desktop again.`,
    {
      details: { desktopId },
    },
  );
}
