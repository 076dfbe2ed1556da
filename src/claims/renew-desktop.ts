import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { renewClaimLease } from './lease-writes.js';
import { type MemberOptions, readHeldMember } from './read-held-member.js';
import { isReleasing } from './releasing-mark.js';

// Writes that only renewed the same claim (the broker's renewal loop, or this call's own write retried after its
// answer was lost) are tried past this many times before the renewal gives up.
const renewalAttempts = 3;

/**
 * Renews the caller's claim for another Lease duration. A Lease changed since it was read but still holding the
 * same session, not being released, was only renewed meanwhile, so the renewal is written again on it.
 *
 * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `CLAIM_CHANGED`.
 */
export async function renewDesktop(ctx: VdiContext, options: MemberOptions): Promise<DesktopView> {
  const { facts, lease: read } = await readHeldMember(ctx, options, 'renew');
  const { desktopId } = facts;
  // an administrator passes the start rule for a v0.6.0 or Lease-less member, but there is nothing to renew
  if (read === undefined) {
    throw new VdiError('CLAIM_ENDED', `${desktopId} has no claim Lease to renew; claim its pool first.`, {
      details: { desktopId },
    });
  }
  let lease: LeaseObject | undefined = read;
  for (let attempt = 0; attempt < renewalAttempts && lease !== undefined; attempt += 1) {
    const renewed = await renewClaimLease(ctx, lease);
    if (renewed) return describeDesktop(facts, renewed);
    const now = await ctx.cluster.getLease(lease.metadata.namespace ?? '', lease.metadata.name ?? '');
    lease = isSameClaim(read, now) ? now : undefined;
  }
  throw new VdiError(
    'CLAIM_CHANGED',
    `The claim on ${desktopId} changed while renewing; read the desktop again.`,
    {
      details: { desktopId },
    },
  );
}

function isSameClaim(read: LeaseObject, now: LeaseObject | undefined): now is LeaseObject {
  return (
    now !== undefined &&
    !isReleasing(now) &&
    now.metadata.uid === read.metadata.uid &&
    now.spec.holderIdentity === read.spec.holderIdentity &&
    now.metadata.annotations?.[sessionIdAnnotation] === read.metadata.annotations?.[sessionIdAnnotation]
  );
}
