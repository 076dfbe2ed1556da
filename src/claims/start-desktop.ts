import { recordAudit } from '../audit.js';
import type { VdiContext } from '../context.js';
import type { DesktopBackend } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { failureReason } from './failure-reason.js';
import { finishTakeover } from './finish-takeover.js';
import { type MemberOptions, readHeldMember } from './read-held-member.js';
import { isResetDue } from './reset-mark.js';

/**
 * Starts a claimed member and tells it as a `started` or `start-failed` event.
 *
 * @returns why the start failed, or `undefined` when it was accepted.
 */
export async function startMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  member: { namespace: string; member: string; desktopId: string },
  identity: string,
): Promise<string | undefined> {
  const failed = await tryStartMember(ctx, backend, member, identity);
  return failed && failureReason(failed.error);
}

async function tryStartMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  member: { namespace: string; member: string; desktopId: string },
  identity: string,
): Promise<{ error: unknown } | undefined> {
  try {
    await backend.startMember({ namespace: member.namespace, member: member.member });
    ctx.events.emit('started', { desktopId: member.desktopId, identity });
    return undefined;
  } catch (error) {
    ctx.events.emit('start-failed', { desktopId: member.desktopId, identity, error: failureReason(error) });
    return { error };
  }
}

/**
 * Starts the caller's desktop; a running desktop is left alone.
 *
 * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `START_FAILED` (retryable); `FORBIDDEN`
 *   naming the permission when the caller may not start members; `STOP_FAILED` or `RECREATE_FAILED` (retryable)
 *   while a takeover's reset is not done.
 */
export async function startDesktop(ctx: VdiContext, options: MemberOptions): Promise<DesktopView> {
  const held = await readHeldMember(ctx, options, 'start');
  const { identity, backend } = held;
  let { facts, lease } = held;
  const { desktopId } = facts;
  if (lease && isResetDue(lease)) {
    // the claim that took it over from an expired claim stopped before the reset: finish it first
    ({ facts, lease } = await finishTakeover(ctx, backend, { facts, lease, actor: identity }));
  }
  const failed = await tryStartMember(ctx, backend, facts, identity);
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
