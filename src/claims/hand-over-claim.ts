import type { VdiContext } from '../context.js';
import type { ClaimToPresent, DesktopBackend, MemberFacts, PresentOutcome } from '../desktop-backend.js';
import { isVdiError } from '../errors.js';
import { sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { failureReason } from './failure-reason.js';
import { finishTakeover, waitUntilDown } from './finish-takeover.js';
import { deleteLeaseAsRead } from './lease-writes.js';
import { type ClaimPlan, isGoingDown } from './plan-claim.js';
import { holdsStill, startClaimedMember } from './start-desktop.js';

import type { ClaimAsked, LockedTurn } from './win-claim.js';
/** What a claim returns: the desktop, and how the claim came about. @category claims */
export interface ClaimResult extends DesktopView {
  owner: string;
  sessionId: string;
  /** The caller already held this desktop; the same session goes on. */
  retried: boolean;
  /** The claim took over a v0.6.0 assignment (or a claim whose Lease was lost) of the same identity. */
  adopted: boolean;
  /** The member was already running when claimed (a warm spare), so the claim did not have to start it. */
  warm: boolean;
  /** Set when the desktop is claimed but did not start; start it again once the cause is fixed. */
  startError?: string;
  /** The claim's Lease as the claim wrote it, for front ends that show its session without reading it again. */
  lease: LeaseObject;
}

/**
 * Reads a member a claim took free or stale again, as {@link finishClaim} checks it, from caches that have seen the
 * won Lease's resourceVersion where they have: they show every change before the win, and the release that freed
 * the member deleted its Lease only after it asked the member to stop.
 */
function readWonMember(
  backend: DesktopBackend,
  plan: Exclude<ClaimPlan, { kind: 'refuse' }>,
  lease: LeaseObject,
): Promise<MemberFacts | undefined> {
  const { resourceVersion } = lease.metadata;
  return backend.readMember(
    { namespace: plan.member.namespace, member: plan.member.member },
    resourceVersion === undefined ? {} : { seenSince: resourceVersion },
  );
}

/** The presentation of a claim as its Lease records it. */
function claimOf(ctx: VdiContext, identity: string, lease: LeaseObject): ClaimToPresent {
  return {
    holder: identity,
    claimedAt: lease.spec.acquireTime ?? ctx.clock.now().toISOString(),
    sessionId: lease.metadata.annotations?.[sessionIdAnnotation] ?? '',
  };
}

/**
 * Writes a claim's presentation on its member, starting it when asked; a start the cluster refuses is left out so
 * that it does not cost the presentation. `undefined` when the member is gone: a Lease the claim took free is then
 * given back.
 */
async function presentMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  plan: Exclude<ClaimPlan, { kind: 'refuse' }>,
  lease: LeaseObject,
  member: MemberFacts,
  claim: ClaimToPresent,
): Promise<PresentOutcome | undefined> {
  try {
    // The claim already holds; a failure here keeps it, and the holder's retry repairs the member.
    return await backend.presentClaim(member, claim).catch((error: unknown) => {
      if (!claim.start || isVdiError(error, 'MEMBER_NOT_FOUND')) throw error;
      return backend.presentClaim(member, { ...claim, start: false });
    });
  } catch (error) {
    if (!isVdiError(error, 'MEMBER_NOT_FOUND')) throw error;
    // A member this claim took free is gone (a shrink removed it after the pool was read): the Lease holds nothing,
    // so give it back. The identity's own claim (a renewal, or a takeover whose reset makes the member again) stays:
    // the member comes back, and the next read finds it resetting.
    if (isFreshTake(plan)) await deleteLeaseAsRead(ctx, lease);
    return undefined;
  }
}

/**
 * Resets a taken-over member when due, or reads a newly taken one again, presents the claim and starts the member;
 * `undefined` when the member is gone or being deleted or its previous instance is still going down, and its Lease
 * was given back.
 */
export async function finishClaim(
  ctx: VdiContext,
  backend: DesktopBackend,
  won: Extract<LockedTurn, { kind: 'won' }>,
  asked: ClaimAsked,
): Promise<ClaimResult | undefined> {
  const { identity } = asked;
  const { plan, lease: written } = won;
  let member = plan.member;
  let lease = written;
  let start = plan.start;
  let presented: PresentOutcome | undefined;
  if ((plan.kind === 'replace' && plan.reset) || plan.resetDue) {
    // The previous holder's guest may still run: the new holder gets the member only once it is reset.
    ({ facts: member, lease } = await finishTakeover(ctx, backend, {
      facts: member,
      lease,
      actor: asked.actor,
    }));
    start = true;
  } else if (plan.kind === 'create' || plan.kind === 'replace') {
    // A member taken free is presented at once when the process's caches show it ready and hold together: the
    // write is conditional on the member as they show it, so it lands only if that is still how it is.
    const cached = won.checked ?? backend.cachedMember?.(plan.member);
    if (cached && cached.pool === plan.member.pool && !cached.deleting && !isGoingDown(cached)) {
      const toPresent = { ...claimOf(ctx, identity, lease), start: cached.power !== 'running', exact: true };
      const outcome = await presentMember(ctx, backend, plan, lease, cached, toPresent);
      if (outcome === undefined) return undefined;
      if (outcome.kind !== 'changed') {
        presented = outcome;
        member = cached;
        start = toPresent.start;
      }
    }
    if (presented === undefined) {
      const fresh = await readWonMember(backend, plan, lease).catch(async (error: unknown) => {
        // unable to tell whether the member is ready, the claim gives it back rather than hold it and fail
        await deleteLeaseAsRead(ctx, lease);
        throw error;
      });
      // The view may be older than the Lease this claim won: the member may be being deleted (KubeVirt shows
      // `Terminating` only a moment later), or gone, and the Lease holds nothing.
      if (fresh === undefined || fresh.deleting) {
        await deleteLeaseAsRead(ctx, lease);
        return undefined;
      }
      // The last holder's guest may still be going down: a release freed the member after the claim's look at it.
      // The Lease is this claim's all the same, so it waits for the guest to go rather than give the Lease back; a
      // guest still there after the wait is given back (the take was never a claim: `isTakeUnderWay`).
      const ready = isGoingDown(fresh) ? await waitUntilDown(ctx, backend, fresh) : fresh;
      if (isGoingDown(ready)) {
        await deleteLeaseAsRead(ctx, lease);
        return undefined;
      }
      member = ready;
      start = ready.power !== 'running';
    }
  }
  presented ??= await presentMember(ctx, backend, plan, lease, member, {
    ...claimOf(ctx, identity, lease),
    start,
  });
  if (presented === undefined) return undefined;
  // a release of this claim wrote the member first: nothing was written, and the claim goes on with another
  // (`changed` answers only a claim presented exactly, above)
  if (presented.kind !== 'presented') return undefined;
  // the start below is conditional on the member as presented, read before the claim is confirmed
  member = { ...member, resourceVersion: presented.resourceVersion };
  if (!presented.sealed && !(await confirmHeld(ctx, backend, { member, lease, identity }))) return undefined;
  let startError: string | undefined;
  if (presented.started) {
    ctx.events.emit('started', { desktopId: member.desktopId, identity });
  } else if (start) {
    const outcome = await startClaimedMember(ctx, backend, member, { identity, lease });
    // a release ended the claim after all: take the copy back as above, and claim again
    if (outcome.kind === 'released') {
      await confirmHeld(ctx, backend, { member, lease, identity });
      return undefined;
    }
    if (outcome.kind === 'failed') startError = failureReason(outcome.error);
  }
  // Built from what the claim wrote, not read back: a failing read must not turn a held claim into an error. The
  // member shows the claim's session now (it was presented), whatever the facts read before said.
  const session = lease.metadata.annotations?.[sessionIdAnnotation];
  const view = describeDesktop(
    { ...member, presentation: { ...member.presentation, sessionId: session } },
    lease,
  );
  return {
    ...view,
    owner: identity,
    sessionId: view.sessionId ?? '',
    retried: plan.kind === 'renew',
    adopted: plan.kind === 'adopt',
    warm: !start,
    lease,
    ...(startError === undefined ? {} : { startError }),
  };
}

/** Whether a plan took a member nobody held: a free one, a claim that bound nobody, or the identity's adoption. */
function isFreshTake(plan: Exclude<ClaimPlan, { kind: 'refuse' }>): boolean {
  if (plan.resetDue) return false;
  return plan.kind === 'create' || plan.kind === 'adopt' || (plan.kind === 'replace' && !plan.reset);
}

/**
 * Whether a claim still holds once its presentation copy is written. A release that ended it meanwhile cleared the
 * copy before the claim wrote it, so the claim takes its copy back, unless the member's Lease names the identity
 * again: a releasing claim's own release clears it after the Lease goes, and a newer claim presents itself.
 */
async function confirmHeld(
  ctx: VdiContext,
  backend: DesktopBackend,
  claim: { member: MemberFacts; lease: LeaseObject; identity: string },
): Promise<boolean> {
  const { member, lease, identity } = claim;
  if (await holdsStill(ctx, lease)) return true;
  const current = await ctx.cluster.getLease(member.namespace, lease.metadata.name ?? '').catch(() => lease);
  if (current?.spec.holderIdentity !== identity) {
    // best-effort: a copy left on a stopped member without a Lease reads as free, and the next pass removes it
    const sessionId = lease.metadata.annotations?.[sessionIdAnnotation] ?? '';
    await backend.clearPresentation(member, identity, sessionId).catch(() => false);
  }
  return false;
}
