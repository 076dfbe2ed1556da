import { recordAudit } from '../audit.js';
import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { pauseAfterConflict } from '../pause-after-conflict.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { failureReason } from './failure-reason.js';
import { finishTakeover, waitUntilDown } from './finish-takeover.js';
import { isGoingDown, isHandedOut } from './plan-claim.js';
import { type MemberOptions, readHeldMember, releasedMeanwhile } from './read-held-member.js';
import { isReleasing, leavesDesktopDuringRelease } from './releasing-mark.js';
import { isResetDue } from './reset-mark.js';

// a few rereads are normal while the member's status changes between the read and the start
const startAttempts = 5;

/** How a start of a claimed member went: accepted, failed, or not made because the claim was released meanwhile. */
export type StartOutcome = { kind: 'started' } | { kind: 'failed'; error: unknown } | { kind: 'released' };

/**
 * Whether `lease`'s claim still holds: its Lease has the same session and no release has marked it, or, given the
 * member as read before this read (`duringRelease`), a release marked it that has not stopped or deleted that
 * member yet ({@link leavesDesktopDuringRelease}). A read that fails leaves the claim as it was last seen: as far as
 * anyone can tell it holds.
 */
export async function holdsStill(
  ctx: VdiContext,
  lease: LeaseObject,
  duringRelease?: MemberFacts,
): Promise<boolean> {
  const current = await ctx.cluster
    .getLease(lease.metadata.namespace ?? '', lease.metadata.name ?? '')
    .catch(() => lease);
  const session = (read: LeaseObject) => read.metadata.annotations?.[sessionIdAnnotation];
  if (current === undefined || session(current) !== session(lease)) return false;
  return !isReleasing(current) || leavesDesktopDuringRelease(duringRelease, current);
}

/**
 * Starts a claimed member, conditional on the member as read before the claim's Lease was last found holding, and
 * tells it as a `started` or `start-failed` event. A release of the claim marks its Lease before it stops the
 * member, so one that began after that check stops the member after this start, and one that began before it
 * changed the member: the start is refused, the member read again, then the Lease, and a released claim is not
 * started for nobody.
 */
export async function startClaimedMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  member: MemberFacts,
  claim: { identity: string; lease: LeaseObject; duringRelease?: boolean },
): Promise<StartOutcome> {
  const ref = { namespace: member.namespace, member: member.member };
  const { desktopId } = member;
  let asRead = member;
  const failed = (error: unknown): StartOutcome => {
    ctx.events.emit('start-failed', { desktopId, identity: claim.identity, error: failureReason(error) });
    return { kind: 'failed', error };
  };
  for (let attempt = 1; ; attempt += 1) {
    try {
      await backend.startMember(ref, asRead);
      ctx.events.emit('started', { desktopId, identity: claim.identity });
      return { kind: 'started' };
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT') || attempt === startAttempts) return failed(error);
    }
    await pauseAfterConflict(attempt);
    try {
      // the member first, then the claim: the order the conditional start relies on
      const read = await backend.readMember(ref);
      if (read === undefined) return failed(memberGone(desktopId));
      if (!(await holdsStill(ctx, claim.lease, claim.duringRelease ? read : undefined))) {
        return { kind: 'released' };
      }
      asRead = read;
    } catch (error) {
      return failed(error);
    }
  }
}

function memberGone(desktopId: string): VdiError {
  return new VdiError('MEMBER_NOT_FOUND', `${desktopId} is gone; its claim reads as resetting.`, {
    details: { desktopId },
  });
}

/**
 * Starts the caller's desktop; a running desktop is left alone.
 *
 * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `START_FAILED` (retryable); `FORBIDDEN`
 *   naming the permission when the caller may not start members; `STOP_FAILED` or `RECREATE_FAILED` (retryable)
 *   while a takeover's reset is not done, and `STOP_FAILED` (retryable) while a claim not handed out yet waits
 *   for the last holder's guest to go (about ten seconds).
 */
export async function startDesktop(ctx: VdiContext, options: MemberOptions): Promise<DesktopView> {
  // the holder keeps the desktop until a release stopped or deleted its member: a start is refused only then
  const held = await readHeldMember(ctx, options, 'start', { duringRelease: true });
  const { identity, backend } = held;
  let { facts, lease } = held;
  const { desktopId } = facts;
  if (lease && isResetDue(lease)) {
    // the claim that took it over from an expired claim stopped before the reset: finish it first
    ({ facts, lease } = await finishTakeover(ctx, backend, { facts, lease, actor: identity }));
  } else if (lease && !isHandedOut(facts, lease)) {
    // a claim that won the member has not handed it out: the last holder's guest goes before this one starts
    facts = await waitUntilDown(ctx, backend, facts);
    if (isGoingDown(facts)) {
      throw new VdiError(
        'STOP_FAILED',
        `${desktopId} is yours, but the previous session on it is still shutting down; start it again in a moment.`,
        { retryable: true, details: { desktopId } },
      );
    }
  }
  const outcome = await startHeld(ctx, backend, facts, { identity, lease });
  if (outcome.kind === 'released') throw releasedMeanwhile(desktopId);
  const failed = outcome.kind === 'failed' ? outcome : undefined;
  await recordAudit(ctx, {
    action: 'vdi start',
    user: identity,
    target: desktopId,
    ...(failed === undefined ? {} : { error: new Error(failureReason(failed.error)) }),
  });
  if (failed !== undefined) {
    // a missing permission is the adapter's FORBIDDEN, naming it: trying again would not help
    if (isVdiError(failed.error, 'FORBIDDEN')) throw failed.error;
    throw new VdiError(
      'START_FAILED',
      `Could not start ${desktopId}: ${failureReason(failed.error)} The claim stays; start it again once the cause is fixed.`,
      { retryable: true, details: { desktopId }, cause: failed.error },
    );
  }
  return describeDesktop(
    (await backend.readMember({ namespace: facts.namespace, member: facts.member })) ?? facts,
    lease,
  );
}

// A start on a claim checks the claim after reading the member; a desktop without a claim (an administrator's
// start of a v0.6.0 assignment) has none to check.
async function startHeld(
  ctx: VdiContext,
  backend: DesktopBackend,
  facts: MemberFacts,
  claim: { identity: string; lease: LeaseObject | undefined },
): Promise<StartOutcome> {
  const { lease, identity } = claim;
  if (lease === undefined) {
    try {
      await backend.startMember({ namespace: facts.namespace, member: facts.member });
      ctx.events.emit('started', { desktopId: facts.desktopId, identity });
      return { kind: 'started' };
    } catch (error) {
      ctx.events.emit('start-failed', { desktopId: facts.desktopId, identity, error: failureReason(error) });
      return { kind: 'failed', error };
    }
  }
  if (!(await holdsStill(ctx, lease, facts))) return { kind: 'released' };
  return await startClaimedMember(ctx, backend, facts, { identity, lease, duringRelease: true });
}
