import { setTimeout as sleep } from 'node:timers/promises';
import { recordAudit } from '../audit.js';
import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { failureReason } from './failure-reason.js';
import { clearResetMark, recordedSourceOf } from './lease-writes.js';
import { isGoingDown } from './plan-claim.js';
import { isReleasing } from './releasing-mark.js';
import { isResetDue } from './reset-mark.js';

/** How often a claim looks again at a member whose previous instance is going down. */
export const downCheckMs = 200;
/** Ten seconds for a guest to finish going down before a claim stops waiting for it, unless the SDK says otherwise. */
export const defaultGoingDownWaitMs = 10_000;

/** How many looks a claim or start takes at a member going down within the context's wait. */
export function downChecksOf(ctx: Pick<VdiContext, 'goingDownWaitMs'>): number {
  return Math.ceil(ctx.goingDownWaitMs / downCheckMs);
}
const clearAttempts = 3;

/** A member after its takeover reset: its facts, and the Lease without the mark. */
export interface FinishedTakeover {
  facts: MemberFacts;
  lease: LeaseObject;
}

/**
 * Resets a member that a claim took over from an expired claim (its Lease carries the reset-due mark): stops it,
 * or recreates it when ephemeral, records `vdi reclaim (expired)`, waits a while for the previous instance to go,
 * then clears the mark. While the previous instance is still there the mark stays, so the member is not handed out. Run by the claim that took it over, and by its holder's next claim or start when the
 * first one stopped before the reset: each step can be run again. It reads the Lease first, and resets nothing when
 * another claim of the holder has cleared the mark since (or the claim is no longer the same).
 *
 * @throws {@link VdiError} `STOP_FAILED` or `RECREATE_FAILED` (retryable) when the reset fails, and
 *   `STOP_FAILED` (retryable) when the previous instance is still going down after the wait: the claim and its
 *   mark stay, so the next claim or start tries again; `CLAIM_CHANGED` when the claim changed meanwhile.
 */
export async function finishTakeover(
  ctx: VdiContext,
  backend: DesktopBackend,
  taken: {
    facts: MemberFacts;
    lease: LeaseObject;
    actor: string;
    /** Called before the reset and before the mark's clear; a throw stops there, as a crash would. */
    fence?: () => Promise<void>;
  },
): Promise<FinishedTakeover> {
  const { facts, lease, actor } = taken;
  const fence = taken.fence ?? (async () => {});
  const { namespace, member, pool, desktopId } = facts;
  // Another claim of the holder may have finished this reset since this one read the Lease, and handed the member
  // out: it is not reset twice. A claim that is no longer this one's is not reset at all.
  const current = await ctx.cluster.getLease(namespace, lease.metadata.name ?? '');
  if (current === undefined || session(current) !== session(lease) || isReleasing(current)) {
    throw claimChanged(desktopId);
  }
  if (!isResetDue(current)) {
    return { facts: (await backend.readMember({ namespace, member })) ?? facts, lease: current };
  }
  await fence();
  try {
    await backend.resetMember({ namespace, member, pool }, { source: recordedSourceOf(current, pool) });
  } catch (error) {
    const failed = new VdiError(
      facts.ephemeral ? 'RECREATE_FAILED' : 'STOP_FAILED',
      `Could not reset ${desktopId} after taking it over from an expired claim: ${failureReason(error)} It stays yours; claim or start it again to finish the reset.`,
      { retryable: true, details: { desktopId }, cause: error },
    );
    await recordAudit(ctx, {
      action: 'vdi reclaim (expired)',
      user: actor,
      target: desktopId,
      error: failed,
    });
    throw failed;
  }
  await recordAudit(ctx, { action: 'vdi reclaim (expired)', user: actor, target: desktopId });
  const after = await waitUntilDown(ctx, backend, facts);
  if (isGoingDown(after)) {
    // Clearing the mark would hand out a member the previous holder's guest still runs on; the holder retries.
    throw new VdiError(
      'STOP_FAILED',
      `${desktopId} was taken over from an expired claim, but its previous session is still shutting down. It stays yours; claim or start it again in a moment.`,
      { retryable: true, details: { desktopId } },
    );
  }
  await fence();
  return { facts: after, lease: await clearMark(ctx, lease, desktopId) };
}

/** Reads the member again every {@link downCheckMs}, within the context's wait, until it is not going down. */
export async function waitUntilDown(
  ctx: Pick<VdiContext, 'goingDownWaitMs'>,
  backend: DesktopBackend,
  facts: MemberFacts,
): Promise<MemberFacts> {
  let current = facts;
  for (let check = 1; check <= downChecksOf(ctx); check += 1) {
    const read = await backend.readMember({ namespace: facts.namespace, member: facts.member });
    // gone: a recreate that a later reset finishes; the claim keeps what it knew
    if (read === undefined) return current;
    current = read;
    if (!isGoingDown(current)) return current;
    await sleep(downCheckMs);
  }
  return current;
}

async function clearMark(ctx: VdiContext, lease: LeaseObject, desktopId: string): Promise<LeaseObject> {
  let current = lease;
  for (let attempt = 1; attempt <= clearAttempts; attempt += 1) {
    const cleared = await clearResetMark(ctx, current);
    if (cleared) return cleared;
    // a renewal or a console mark moved it on: read it again, unless it is no longer this claim or a release
    // owns it now (a start after that would run the member for nobody)
    const read = await ctx.cluster.getLease(lease.metadata.namespace ?? '', lease.metadata.name ?? '');
    if (read === undefined || session(read) !== session(lease) || isReleasing(read)) break;
    if (!isResetDue(read)) return read;
    current = read;
  }
  throw claimChanged(desktopId);
}

function session(lease: LeaseObject): string | undefined {
  return lease.metadata.annotations?.[sessionIdAnnotation];
}

function claimChanged(desktopId: string): VdiError {
  return new VdiError(
    'CLAIM_CHANGED',
    `The claim on ${desktopId} changed while its member was reset; read the desktop again before deciding.`,
    { retryable: true, details: { desktopId } },
  );
}
