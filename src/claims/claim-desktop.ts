import { z } from 'zod';
import { recordAudit } from '../audit.js';
import { backendFor, type VdiContext } from '../context.js';
import {
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { claimingAnnotation, leasePoolLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import {
  claimantLeaseName,
  deleteLeaseAsRead,
  pointClaimantLease,
  renewClaimLease,
  writeClaimLease,
} from './lease-writes.js';
import { type ClaimOrder, type ClaimPlan, planClaim } from './plan-claim.js';
import { startMember } from './start-desktop.js';

/** Options of {@link ClaimsService.claim}. @category claims */
export interface ClaimOptions {
  /** The pool's name (the `corral.dev/vdi-pool` label value). */
  pool: string;
  /** The caller's exact identity, from the request pipeline. */
  identity: string;
  /** Defaults to the SDK's namespace. Only this namespace is read and written. */
  namespace?: string;
  /** The pool's kind. @defaultValue `'vm'` */
  kind?: DesktopKind;
}

/** What a claim returns: the desktop, and how the claim came about. @category claims */
export interface ClaimResult extends DesktopView {
  owner: string;
  sessionId: string;
  /** The caller already held this desktop; the same session goes on. */
  retried: boolean;
  /** The claim took over a v0.6.0 assignment (or a claim whose Lease was lost) of the same identity. */
  adopted: boolean;
  /** Set when the desktop is claimed but did not start; start it again once the cause is fixed. */
  startError?: string;
}

const claimSchema = z.object({
  pool: poolNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
});

/**
 * Claims a member of a pool for `options.identity` as {@link planClaim} picks it, starts it, and records the
 * claim (by `actor`, default the identity) in the audit and as a `claimed` event.
 *
 * @throws {@link VdiError} `NO_FREE_MEMBER`, `POOL_NOT_FOUND`, `CLAIM_CHANGED` (retryable) when the pool's
 *   claims kept changing, `INVALID_INPUT`.
 */
export async function claimDesktop(
  ctx: VdiContext,
  options: ClaimOptions,
  how: { actor: string | undefined; order: ClaimOrder },
): Promise<ClaimResult> {
  const { pool, identity, namespace: asked, kind } = parseOptions(claimSchema, options, 'claim');
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const backend = backendFor(ctx, kind ?? defaultDesktopKind);
  const user = how.actor ?? identity;
  try {
    const result = await claimMember(ctx, backend, { namespace, pool, identity, order: how.order });
    await recordAudit(ctx, {
      action: 'vdi claim',
      user,
      target: result.id,
      ...(result.startError === undefined
        ? {}
        : { error: new Error(`claimed, but the start failed: ${result.startError}`) }),
    });
    ctx.events.emit('claimed', {
      desktopId: result.id,
      identity,
      sessionId: result.sessionId,
      adopted: result.adopted,
      retried: result.retried,
    });
    return result;
  } catch (error) {
    const poolId = formatPoolId({ kind: backend.kind, namespace, pool });
    await recordAudit(ctx, { action: 'vdi claim', user, target: poolId, error });
    throw error;
  }
}

async function claimMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: { namespace: string; pool: string; identity: string; order: ClaimOrder },
): Promise<ClaimResult> {
  const { namespace, pool, identity, order } = asked;
  const claimantName = claimantLeaseName(pool, identity);
  // Every lost race means another claimant won a member, so the rounds are bounded by the pool's size.
  for (let round = 0; ; round += 1) {
    const [members, leases, claimant] = await Promise.all([
      backend.listMembers(namespace, pool),
      ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`),
      ctx.cluster.getLease(namespace, claimantName),
    ]);
    const prefer = claimant?.metadata.annotations?.[claimingAnnotation];
    const plan = planClaim({
      members,
      leases,
      identity,
      order,
      random: Math.random,
      now: ctx.clock.now(),
      prefer,
    });
    if (plan.kind === 'refuse' && plan.code === 'POOL_NOT_FOUND') {
      throw new VdiError(
        'POOL_NOT_FOUND',
        `There is no pool "${pool}" in namespace "${namespace}"; list the pools to see what exists.`,
        { details: { namespace, pool } },
      );
    }
    if (round > members.length + 2) {
      throw new VdiError(
        'CLAIM_CHANGED',
        `The claims of pool "${pool}" kept changing while claiming; try again.`,
        { retryable: true, details: { namespace, pool } },
      );
    }
    if (plan.kind === 'refuse') {
      // a claimant Lease this claim pointed at a member it then lost names nothing worth keeping
      if (claimant) await deleteLeaseAsRead(ctx, claimant);
      throw new VdiError(
        'NO_FREE_MEMBER',
        `Pool "${pool}" in namespace "${namespace}" has no free member: every member has a user. Release (unassign) one, or grow the pool.`,
        { details: { namespace, pool, members: members.length } },
      );
    }
    if (plan.kind === 'renew') {
      const renewed = await renewClaimLease(ctx, plan.lease);
      // released or changed meanwhile: plan again
      const result = renewed && (await finishClaim(ctx, backend, plan, renewed, identity));
      if (result) return result;
      continue;
    }
    const target = { namespace, pool, member: plan.member.member, identity };
    // The identity's claims meet at its claimant Lease, so concurrent ones all take the member it names.
    const lock = prefer === target.member ? claimant : await pointClaimantLease(ctx, target, claimant);
    // another claim of this identity pointed it first: read again and take its member
    if (!lock) continue;
    const written = await writeClaimLease(ctx, target, plan.kind === 'replace' ? plan : undefined);
    if (!written) {
      // lost the race: read the pool again rather than trying members that may be taken too
      ctx.events.emit('claim-conflict', { desktopId: plan.member.desktopId, identity });
      continue;
    }
    if (await deleteLeaseAsRead(ctx, lock)) {
      const result = await finishClaim(ctx, backend, plan, written, identity);
      if (result) return result;
      continue;
    }
    // Another claim of this identity moved the claimant Lease to another member meanwhile: give this one
    // back and read again, so the identity ends with the member the claimant Lease names.
    await deleteLeaseAsRead(ctx, written);
  }
}

/** Presents and starts the claimed member; `undefined` when the member is gone and its Lease was given back. */
async function finishClaim(
  ctx: VdiContext,
  backend: DesktopBackend,
  plan: { kind: ClaimPlan['kind']; member: MemberFacts; start: boolean },
  lease: LeaseObject,
  identity: string,
): Promise<ClaimResult | undefined> {
  const { member } = plan;
  try {
    // The claim already holds; a failure here keeps it, and the holder's retry repairs the member.
    await backend.presentClaim(member, {
      holder: identity,
      claimedAt: lease.spec.acquireTime ?? ctx.clock.now().toISOString(),
    });
  } catch (error) {
    if (!isVdiError(error, 'MEMBER_NOT_FOUND')) throw error;
    // a shrink removed the member after the pool was read: the Lease holds nothing, so give it back
    await deleteLeaseAsRead(ctx, lease);
    return undefined;
  }
  const startError = plan.start ? await startMember(ctx, backend, member, identity) : undefined;
  // Built from what the claim wrote, not read back: a failing read must not turn a held claim into an error.
  const view = describeDesktop(member, lease);
  return {
    ...view,
    owner: identity,
    sessionId: view.sessionId ?? '',
    retried: plan.kind === 'renew',
    adopted: plan.kind === 'adopt',
    ...(startError === undefined ? {} : { startError }),
  };
}
