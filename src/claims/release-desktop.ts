import { type AuditAction, recordAudit } from '../audit.js';
import { backendFor, type VdiContext } from '../context.js';
import {
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
  type ResetHow,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { validateIdentity, validateMemberName, validateNamespace } from '../validate.js';
import { classifyLease } from './claim-liveness.js';
import { type ClaimantLock, giveBackClaimantLocks, takeClaimantLocks } from './claimant-lock.js';
import { failureReason } from './failure-reason.js';
import {
  deleteReleasingLease,
  markClaimReleasing,
  ownClaimsSelector,
  recordedSourceOf,
  unmarkClaimReleasing,
} from './lease-writes.js';
import { planRelease, type ReleasePlan } from './plan-release.js';
import { readMemberClaim } from './read-member-claim.js';
import { isReleasing } from './releasing-mark.js';

/** What a release returns. @category claims */
export interface ReleaseResult {
  desktopId: string;
  /** Who held the desktop. */
  holder: string;
  /** An administrator released another identity's desktop. */
  force: boolean;
  /** How the member was reset: stopped (disks kept) or recreated from its golden VM. */
  reset: ResetHow;
  /**
   * Why the member's presentation copy could not be cleared, when it could not. The release is done all the
   * same: a stopped member without a Lease counts as free, and the next claim overwrites the copy.
   */
  presentationError?: VdiError;
}

/** Options of {@link releaseMember}, the release path shared by users, administrators and the reclaim policy. */
export interface ReleaseMemberOptions {
  namespace: string;
  member: string;
  /** Who acts: the holder, an administrator, or `corral-vdi/broker`. */
  actor: string;
  asAdmin: boolean;
  /** The audit action; default `vdi release`, or `vdi force-release` for an administrator on another's desktop. */
  auditAction?: AuditAction;
  /** Release only the claim with this session ID; a newer claim of the member is `CLAIM_CHANGED`. */
  expectedSessionId?: string;
  /** The member's kind. @defaultValue `'vm'` */
  kind?: DesktopKind;
  /**
   * Called before each write of the release (the releasing mark, the presentation clear, the reset, the Lease
   * delete); a throw stops the release there, as a crash would, and a later release finishes it.
   */
  fence?: () => Promise<void>;
  /**
   * What the releasing mark says ends the claim (`corral.dev/vdi-release-cause`): `released`, or `reclaimed <reason>`
   * for the session engine's policy. Every broker replica closes the desktop's consoles by it.
   * @defaultValue `'released'`
   */
  cause?: string;
}

/**
 * Resets a member and ends its claim: the one release path, used by holders, administrators and the reclaim
 * policy. {@link planRelease} decides. The release first makes the claim its own: it marks the Lease
 * `corral.dev/vdi-releasing` with its resourceVersion as precondition, so a claim or renewal that raced it loses
 * and nothing else is touched. Then a member that is not a persistent VM has its copy cleared, best-effort; then a
 * persistent member is stopped (its disks stay), an ephemeral one recreated from its golden VM (its replacement made
 * beside it first); then, once a persistent VM member's stop was accepted, its copy is removed and the claim's session
 * recorded as released on it (a write even without a copy, which a start or presentation of that claim racing the
 * release meets; a start that landed after the stop is stopped again first); then the Lease is deleted. Until the
 * stop is accepted or the member deleted, the holder may start the desktop and open consoles. A desktop without a
 * Lease (a v0.6.0 or orphaned claim) keeps its copy until the stop is asked for: only the copy keeps a claim from
 * taking it meanwhile. A reset that fails while the member is still the one the release found (the stop refused,
 * or a recreate whose clone failed before the member's delete) gives the claim back as the holder had it: the mark
 * removed; the holder keeps using the desktop, and the next release or reclaim pass tries again (unless the holder
 * claimed another member of the pool meanwhile, which a claim does past a claim being released: then the mark stays,
 * so the holder keeps one member of the pool). Any other failed
 * step (a write, a crash, a recreate that failed after the delete) leaves the Lease marked releasing under the
 * same holder, and the next release, or the pass once the mark is stale or the member gone, finishes it.
 *
 * @throws {@link VdiError} `CLAIM_ENDED`, `NOT_HOLDER`, `CLAIM_CHANGED`, `STOP_FAILED`, `RECREATE_FAILED`,
 *   `MEMBER_NOT_FOUND`; `CONFLICT` (retryable) when the member kept changing while its release was recorded;
 *   `FORBIDDEN` naming the permission when the caller may not patch it.
 */
export async function releaseMember(ctx: VdiContext, options: ReleaseMemberOptions): Promise<ReleaseResult> {
  const { member, actor } = options;
  const namespace = validateNamespace(options.namespace);
  validateMemberName(member);
  validateIdentity(actor);
  const backend = backendFor(ctx, options.kind ?? defaultDesktopKind);
  const { plan, lease, facts: before } = await takeClaim(ctx, backend, { ...options, namespace });

  const { holder, force } = plan;
  const desktopId = formatDesktopId({ kind: backend.kind, namespace, member });
  const action = options.auditAction ?? (force ? 'vdi force-release' : 'vdi release');
  const auditTarget = force ? `${desktopId} (holder ${holder})` : desktopId;
  const fence = options.fence ?? (async () => {});
  let presentationError: unknown;
  const session = sessionOf(plan, lease);
  const ref = { namespace, member, pool: plan.pool };
  // a persistent VM member records the release once its stop was accepted: until then the desktop is the holder's
  const seals = plan.clearPresentation && session !== undefined && backend.sealRelease !== undefined;
  if (plan.clearPresentation && plan.lease && !seals) {
    await fence();
    // First, so that a start of this claim read before the releasing mark is refused: it is conditional on the
    // member as that start read it, and this write changes the member. A copy left on a stopped member without a
    // Lease reads as free, so the release goes on either way.
    presentationError = await clearCopy(backend, { namespace, member }, holder);
  }
  // A reset that fails gives the claim back while the member is the one found, and answers as the reset failed
  const failReset = async (error: unknown): Promise<never> => {
    // a concurrent release of the same claim may have ended it meanwhile: answer as a repeated release would
    await refuseIfEnded(ctx, backend, { ...options, namespace, expectedSessionId: session });
    const kept = await giveBack(ctx, backend, { namespace, member, plan, lease, before, fence });
    const stays = kept
      ? `so it stays claimed by ${holder} as before`
      : `so it stays claimed by ${holder}, marked releasing`;
    const failed = new VdiError(
      plan.how === 'recreate' ? 'RECREATE_FAILED' : 'STOP_FAILED',
      `Could not ${plan.how} ${desktopId}, ${stays}: ${failureReason(error)} Release it again once the cause is fixed.`,
      { retryable: true, details: { desktopId }, cause: error },
    );
    await recordAudit(ctx, { action, user: actor, target: auditTarget, error: failed });
    throw failed;
  };
  await fence();
  // what an ephemeral member is made from once its object no longer says: the source its claim recorded
  const resetOptions = { source: recordedSourceOf(lease, plan.pool) };
  let reset = await backend.resetMember(ref, resetOptions).catch(failReset);
  for (let round = 1; seals; round += 1) {
    // the record comes once the stop was accepted; a start of the holder that landed after the stop makes the member
    // ask to run again, and it is stopped again before the record
    await fence();
    let sealed: boolean | undefined;
    try {
      sealed = await backend.sealRelease?.({ namespace, member }, holder, session);
      if (sealed === false && round === sealAttempts) throw startedAgain(desktopId);
    } catch (error) {
      await recordAudit(ctx, { action, user: actor, target: auditTarget, error });
      throw error;
    }
    if (sealed !== false) break;
    await fence();
    reset = await backend.resetMember(ref, resetOptions).catch(failReset);
  }
  if (plan.clearPresentation && !plan.lease) {
    await fence();
    // Without a Lease only the copy keeps the member taken while its guest runs: it goes once the stop is asked for
    presentationError = await clearCopy(backend, { namespace, member }, holder);
  }
  if (lease) {
    await fence();
    try {
      await deleteReleasingLease(ctx, lease, desktopId);
    } catch (error) {
      await recordAudit(ctx, { action, user: actor, target: auditTarget, error });
      throw error;
    }
  }
  await recordAudit(ctx, { action, user: actor, target: auditTarget });
  ctx.events.emit('released', { desktopId, identity: actor, holder, force });
  return {
    desktopId,
    holder,
    force,
    reset,
    ...(presentationError === undefined ? {} : { presentationError: asVdiError(presentationError) }),
  };
}

type ResetPlan = Extract<ReleasePlan, { kind: 'reset' }>;

// each round needs a start of the holder to land between a stop and the record: a few are plenty
const sealAttempts = 5;

function startedAgain(desktopId: string): VdiError {
  return new VdiError(
    'CONFLICT',
    `${desktopId} was started again each time its release stopped it, so the release is not recorded yet; release it again.`,
    { retryable: true, details: { desktopId } },
  );
}

/** Clears the holder's copy, best-effort: the error, unless it is none or a copy that changed meanwhile. */
async function clearCopy(
  backend: DesktopBackend,
  ref: { namespace: string; member: string },
  holder: string,
): Promise<unknown> {
  return await backend
    .clearPresentation(ref, holder)
    .then(() => undefined)
    .catch((error: unknown) => (isVdiError(error, 'CONFLICT') ? undefined : error));
}

/**
 * After a reset that failed, gives the claim back to its holder as they had it, while the member is still the one
 * the release found (not deleted or made again part-way through a recreate) and the holder has not claimed another
 * member of the pool meanwhile: the releasing mark is removed (the member's copy stays, as the release records itself
 * on the member only once its stop was accepted). Best-effort: a write that fails leaves the mark, and the next
 * release, or the pass once the mark is stale, finishes the release as after a crash.
 *
 * @returns whether the claim is the holder's again, unmarked.
 */
async function giveBack(
  ctx: VdiContext,
  backend: DesktopBackend,
  attempt: {
    namespace: string;
    member: string;
    plan: ResetPlan;
    lease: LeaseObject | undefined;
    before: MemberFacts | undefined;
    fence: () => Promise<void>;
  },
): Promise<boolean> {
  const { namespace, member, plan, lease, before } = attempt;
  // a claim without a Lease was never marked; its copy goes only once the stop is asked for
  if (lease === undefined) return true;
  try {
    const [now, current] = await Promise.all([
      backend.readMember({ namespace, member }),
      ctx.cluster.getLease(namespace, lease.metadata.name ?? ''),
    ]);
    if (plan.interrupted || !before || !now || now.deleting || now.uid !== before.uid) return false;
    const session = lease.metadata.annotations?.[sessionIdAnnotation] ?? '';
    if (current === undefined || current.metadata.uid !== lease.metadata.uid || !isReleasing(current)) {
      return false;
    }
    if (current.metadata.annotations?.[sessionIdAnnotation] !== session) return false;
    // A claim of the holder passes over its claim being released and takes another member of the pool; under the
    // holder's claimant Lease for the pool, no such claim runs, and one that ran is seen
    const locks = await takeClaimantLocks(ctx, [{ namespace, pool: plan.pool, identity: plan.holder }]);
    try {
      if (await holdsAnother(ctx, { namespace, plan, lease: current, lock: locks[0] })) return false;
      await attempt.fence();
      return await unmarkClaimReleasing(ctx, current);
    } finally {
      await giveBackClaimantLocks(ctx, locks);
    }
  } catch {
    return false;
  }
}

/** Whether the holder holds another live claim of the pool, not being released, read no older than its lock. */
async function holdsAnother(
  ctx: VdiContext,
  own: { namespace: string; plan: ResetPlan; lease: LeaseObject; lock: ClaimantLock | undefined },
): Promise<boolean> {
  const { namespace, plan, lease, lock } = own;
  const claims = await ctx.cluster.listLeases(namespace, ownClaimsSelector(plan.pool, plan.holder), {
    notOlderThan: lock?.lease.metadata.resourceVersion ?? '',
  });
  const now = ctx.clock.now();
  return claims.some(
    (claim) =>
      claim.metadata.name !== lease.metadata.name &&
      claim.spec.holderIdentity === plan.holder &&
      !isReleasing(claim) &&
      classifyLease(claim, now).kind === 'held',
  );
}

function sessionOf(plan: ResetPlan, lease: LeaseObject | undefined): string | undefined {
  return plan.lease === undefined ? undefined : (lease?.metadata.annotations?.[sessionIdAnnotation] ?? '');
}

async function planAgain(ctx: VdiContext, backend: DesktopBackend, options: ReleaseMemberOptions) {
  const { namespace, member } = options;
  const { facts, lease } = await readMemberClaim(ctx, backend, { namespace, member });
  const plan = planRelease({
    kind: backend.kind,
    namespace,
    member,
    facts,
    lease,
    actor: options.actor,
    asAdmin: options.asAdmin,
    expectedSessionId: options.expectedSessionId,
    now: ctx.clock.now(),
  });
  return { plan, lease, facts };
}

// Reads the claim again after a failed reset: one that ended meanwhile gets the refusal a repeated release gets.
async function refuseIfEnded(ctx: VdiContext, backend: DesktopBackend, options: ReleaseMemberOptions) {
  // a read that fails leaves the reset's own failure to report
  const { plan } = await planAgain(ctx, backend, options).catch(() => ({ plan: undefined }));
  if (plan?.kind === 'refuse') throw new VdiError(plan.code, plan.reason, { details: plan.details });
}

// a lost race is planned again from a fresh read, pinned to the session first read so a newer claim is refused
const takeAttempts = 3;

async function takeClaim(
  ctx: VdiContext,
  backend: DesktopBackend,
  options: ReleaseMemberOptions,
): Promise<{ plan: ResetPlan; lease: LeaseObject | undefined; facts: MemberFacts | undefined }> {
  const { namespace, member } = options;
  let expectedSessionId = options.expectedSessionId;
  for (let attempt = 1; ; attempt += 1) {
    const { plan, lease, facts } = await planAgain(ctx, backend, { ...options, expectedSessionId });
    if (plan.kind === 'refuse') throw new VdiError(plan.code, plan.reason, { details: plan.details });
    if (lease === undefined || plan.resume) return { plan, lease, facts };
    await options.fence?.();
    const marked = await markClaimReleasing(ctx, lease, options.cause ?? 'released');
    if (marked) return { plan, lease: marked, facts };
    expectedSessionId ??= lease.metadata.annotations?.[sessionIdAnnotation] ?? '';
    if (attempt === takeAttempts) {
      const desktopId = formatDesktopId({ kind: backend.kind, namespace, member });
      throw new VdiError(
        'CLAIM_CHANGED',
        `The claim on ${desktopId} kept changing while it was being released; nothing was released. Read the desktop again.`,
        { details: { desktopId } },
      );
    }
  }
}

function asVdiError(error: unknown): VdiError {
  if (isVdiError(error)) return error;
  return new VdiError('INTERNAL', failureReason(error), { cause: error });
}
