import type { VdiContext } from '../context.js';
import type { DesktopBackend, DesktopKind, MemberFacts, MemberRef } from '../desktop-backend.js';
import { leaseKindLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { memberOfOtherKind } from '../member-not-found.js';

/** A member as its backend reads it and its claim Lease, each `undefined` when there is none. */
export interface MemberClaim {
  facts: MemberFacts | undefined;
  lease: LeaseObject | undefined;
}

/** The kind of member a claim Lease records; `undefined` for a Lease written before claims recorded it. */
export function claimedKindOf(lease: LeaseObject | undefined): DesktopKind | undefined {
  const recorded = lease?.metadata.labels?.[leaseKindLabel];
  return recorded === 'vm' || recorded === 'ct' ? recorded : undefined;
}

/**
 * Reads a member through the backend of the kind it was named by, and its claim Lease, at once. Every kind's claim
 * is the same Lease name, so a Lease that records another kind, with no member of this kind, is the claim of a
 * member of that kind: the name is no member of this backend's, even while that claim is held.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND` for a member of another kind; the backend's `readMember` refusals.
 */
export async function readMemberClaim(
  ctx: VdiContext,
  backend: DesktopBackend,
  ref: MemberRef,
): Promise<MemberClaim> {
  const [facts, lease] = await Promise.all([
    backend.readMember(ref),
    ctx.cluster.getLease(ref.namespace, leaseNameFor(ref.member)),
  ]);
  const recorded = claimedKindOf(lease);
  if (facts === undefined && recorded !== undefined && recorded !== backend.kind) {
    throw memberOfOtherKind(backend.kind, ref, recorded);
  }
  return { facts, lease };
}
