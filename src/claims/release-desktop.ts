import { type AuditAction, recordAudit } from '../audit.js';
import { backendFor, type VdiContext } from '../context.js';
import { defaultDesktopKind, type ResetHow } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { validateIdentity, validateMemberName, validateNamespace } from '../validate.js';
import { failureReason } from './failure-reason.js';
import { leaseNameFor } from './lease-name.js';
import { deleteClaimLease } from './lease-writes.js';
import { planRelease } from './plan-release.js';

/** What a release returns. @category claims */
export interface ReleaseResult {
  desktopId: string;
  /** Who held the desktop. */
  holder: string;
  /** An administrator released another identity's desktop. */
  force: boolean;
  /** How the member was reset: stopped (disks kept) or recreated from its golden VM. */
  reset: ResetHow;
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
}

/**
 * Resets a member and ends its claim: the one release path, used by holders, administrators and the reclaim
 * policy. {@link planRelease} decides; a persistent member is then stopped (its disks stay), an ephemeral one
 * recreated from its golden VM. Only after that does the Lease go, deleted with its uid and resourceVersion as
 * preconditions, and then the member's presentation copy. A failed reset keeps the claim, so the next call can
 * retry.
 *
 * @throws {@link VdiError} `CLAIM_ENDED`, `NOT_HOLDER`, `CLAIM_CHANGED`, `STOP_FAILED`, `RECREATE_FAILED`,
 *   `MEMBER_NOT_FOUND`.
 */
export async function releaseMember(ctx: VdiContext, options: ReleaseMemberOptions): Promise<ReleaseResult> {
  const { member, actor, asAdmin } = options;
  const namespace = validateNamespace(options.namespace);
  validateMemberName(member);
  validateIdentity(actor);
  const backend = backendFor(ctx, defaultDesktopKind);
  const [lease, facts] = await Promise.all([
    ctx.cluster.getLease(namespace, leaseNameFor(member)),
    backend.readMember({ namespace, member }),
  ]);
  const plan = planRelease({
    kind: backend.kind,
    namespace,
    member,
    facts,
    lease,
    actor,
    asAdmin,
    expectedSessionId: options.expectedSessionId,
    now: ctx.clock.now(),
  });
  if (plan.kind === 'refuse') throw new VdiError(plan.code, plan.reason, { details: plan.details });

  const { holder, force } = plan;
  const desktopId = formatDesktopId({ kind: backend.kind, namespace, member });
  const action = options.auditAction ?? (force ? 'vdi force-release' : 'vdi release');
  const auditTarget = force ? `${desktopId} (holder ${holder})` : desktopId;
  let reset: ResetHow;
  try {
    reset = await backend.resetMember({ namespace, member, pool: plan.pool });
  } catch (error) {
    const failed = new VdiError(
      plan.how === 'recreate' ? 'RECREATE_FAILED' : 'STOP_FAILED',
      `Could not ${plan.how} ${desktopId}, so it stays claimed by ${holder}: ${failureReason(error)} Release it again once the cause is fixed.`,
      { retryable: true, details: { desktopId }, cause: error },
    );
    await recordAudit(ctx, { action, user: actor, target: auditTarget, error: failed });
    throw failed;
  }
  if (plan.lease) {
    try {
      await deleteClaimLease(ctx, namespace, plan.lease, desktopId);
    } catch (error) {
      if (isVdiError(error, 'CLAIM_CHANGED')) {
        await recordAudit(ctx, { action, user: actor, target: auditTarget, error });
      }
      throw error;
    }
  }
  if (plan.clearPresentation) {
    // the claim has ended; a copy left on a stopped member reads as free, so a busy member is not an error
    await backend.clearPresentation({ namespace, member }, holder).catch((error: unknown) => {
      if (!isVdiError(error, 'CONFLICT')) throw error;
    });
  }
  await recordAudit(ctx, { action, user: actor, target: auditTarget });
  ctx.events.emit('released', { desktopId, identity: actor, holder, force });
  return { desktopId, holder, force, reset };
}
