import type { MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';

/**
 * A presentation copy left behind by a claim that ended: the member shows `holder` with `sessionId`, and no claim
 * Lease of the member names that holder.
 *
 * @category sessions
 */
export interface LeftCopy {
  facts: MemberFacts;
  holder: string;
  sessionId: string;
}

/**
 * The members whose presentation copy outlived its claim, from the claim Leases and the members as listed: a
 * claim whose take-back failed, or whose process died before it, left a copy its member's Lease does not back. A
 * copy counts when the member's Lease names another holder (whose claim presents itself), or when there is no
 * Lease naming anyone and the member is stopped. A running member with no Lease is an `orphan` its holder claims
 * back, so its copy stays. Only copies with a session ID count (those a claim of this library wrote): a v0.6.0
 * assignment has none. A member being deleted is left to its deletion. Pure.
 *
 * A copy is only a candidate: the caller reads the member's Lease again after the members were listed, and removes
 * the copy only while it still names the same holder and session (see `clearPresentation`).
 *
 * @category sessions
 */
export function planCopySweep(leases: readonly LeaseObject[], members: readonly MemberFacts[]): LeftCopy[] {
  const holderOf = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease.spec.holderIdentity]));
  return members.flatMap((facts): LeftCopy[] => {
    const { holder, sessionId } = facts.presentation;
    if (holder === undefined || !sessionId || facts.deleting) return [];
    const leaseHolder = holderOf.get(leaseNameFor(facts.member));
    if (leaseHolder === holder) return [];
    return leaseHolder || facts.power === 'stopped' ? [{ facts, holder, sessionId }] : [];
  });
}
