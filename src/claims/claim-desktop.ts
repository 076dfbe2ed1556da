import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { recordAudit } from '../audit.js';
import { backendFor, type VdiContext } from '../context.js';
import { type DesktopBackend, type DesktopKind, defaultDesktopKind } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { uncheckedHolderGroups } from '../keys.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { giveBackClaimantLocks, takeClaimantLocks } from './claimant-lock.js';
import { downCheckMs, downChecksOf } from './finish-takeover.js';
import { type ClaimResult, finishClaim } from './hand-over-claim.js';
import { type ClaimOrder, type ClaimPlan, planClaim } from './plan-claim.js';
import { isPoolCacheSynced } from './pool-reads.js';
import {
  type ClaimAsked,
  type ClaimView,
  claimantScopes,
  type HeldLocks,
  type LockedTurn,
  limitReachedBeforeTurn,
  readSmallView,
  readView,
  takeTurn,
} from './win-claim.js';

export type { ClaimResult };

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
  /**
   * The groups of the user the caller speaks for, from the request pipeline as the identity. Given (even empty),
   * the claim first checks that the pool lets the identity in (its allowed groups and users), which needs `get` on
   * ConfigMaps; left out, the caller is trusted as the CLI is, and nothing is checked.
   */
  groups?: string[];
  /** The caller is an administrator, who may claim from every pool. @defaultValue false */
  asAdmin?: boolean;
  /**
   * How many desktops the identity may hold in all pools of the namespace together, the front end's own limit (the
   * broker's `maxDesktopsPerUser`): a claim that would take one more is refused with `USER_LIMIT_REACHED`, and a
   * claim that returns the desktop the identity holds in the pool is not. With `groups`, the pool's own limit
   * counts too, and the lower one holds. `0` sets none. @defaultValue 0
   */
  maxDesktopsPerUser?: number;
}

const claimSchema = z.object({
  pool: poolNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
  groups: z.array(identitySchema).optional(),
  asAdmin: z.boolean().optional(),
  maxDesktopsPerUser: z.number().int().min(0).optional(),
});

/** How a claim is made: by whom, which member first, and whether the pool's entitlement is asked. */
export interface ClaimHow {
  actor: string | undefined;
  order: ClaimOrder;
  /** An administrator's assign hands out any pool, so it does not ask the claim policy's admission. */
  skipEntitlement?: boolean;
}

/**
 * Claims a member of a pool for `options.identity` as {@link planClaim} picks it, starts it, and records the
 * claim (by `actor`, default the identity) in the audit and as a `claimed` event.
 *
 * @throws {@link VdiError} `NO_FREE_MEMBER` (retryable while members are going down, or while the identity's own
 *   member is being made again), `USER_LIMIT_REACHED` (nothing written when the identity held the limit already), `POOL_NOT_FOUND`, `CLAIM_CHANGED` (retryable) when the pool's
 *   claims kept changing, `STOP_FAILED` / `RECREATE_FAILED` (retryable) when a takeover's reset fails or its
 *   previous instance is still going down (the claim is held, still marked reset-due), `INVALID_INPUT`.
 */
export async function claimDesktop(
  ctx: VdiContext,
  options: ClaimOptions,
  how: ClaimHow,
): Promise<ClaimResult> {
  const {
    pool,
    identity,
    namespace: asked,
    kind,
    groups,
    asAdmin,
    maxDesktopsPerUser,
  } = parseOptions(claimSchema, options, 'claim');
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const backend = backendFor(ctx, kind ?? defaultDesktopKind);
  const user = how.actor ?? identity;
  try {
    // a front end that serves users passes their groups; an operator's own call is trusted, as its RBAC is
    let poolLimit: number | undefined;
    // a claim that asks no entitlement is recorded so, and the session engine never judges it
    let holderGroups = uncheckedHolderGroups;
    if (!how.skipEntitlement && groups !== undefined) {
      const target = { kind: backend.kind, namespace, pool, identity };
      const limits = await ctx.claimPolicy.admit(ctx, { ...target, groups, isAdmin: asAdmin ?? false });
      poolLimit = limits.maxDesktopsPerUser;
      holderGroups = limits.holderGroups ?? uncheckedHolderGroups;
    }
    const result = await claimMember(ctx, backend, {
      namespace,
      pool,
      identity,
      order: how.order,
      actor: user,
      holderGroups,
      // 0 is no limit
      limit: ctx.claimPolicy.limitOf(maxDesktopsPerUser || undefined, poolLimit),
    });
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

/**
 * Claims a member in turns. Each turn takes the identity's claimant Lease for the pool, so the claims of one
 * identity on one pool (a double-click, two tabs, two broker replicas) run their turns one at a time; under it the
 * identity's own claims are read fresh, so a turn sees every member an earlier turn won, and renews that one
 * instead of winning a second. A claim under a per-user limit first takes the identity's claimant Lease for the
 * whole namespace, so its limited claims on all pools run their turns one at a time, and counts the identity's
 * claims of every pool under it. The pool itself is planned from the cached read; a stale one costs a lost Lease
 * write, after which the turn tries the other members the same read shows free. The member is then reset,
 * presented and started outside the lock: a later turn of the identity finds its Lease and renews it.
 */
async function claimMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
): Promise<ClaimResult> {
  const { namespace, pool } = asked;
  const refusal = await limitReachedBeforeTurn(ctx, asked);
  if (refusal) throw refusal;
  // with the process's caches synced, a turn plans from them as they are then: nothing is read before it; else from
  // the members that can be free, a page at a time, or the whole pool where a page cannot tell
  const readSmallOrPool = async (fresh: boolean) =>
    (await readSmallView(ctx, backend, asked)) ?? (await readView(ctx, backend, asked, !fresh));
  // the first view is read while the first claimant Leases are written: it only proposes members
  let firstView: Promise<ClaimView> | undefined = isPoolCacheSynced(ctx, namespace)
    ? undefined
    : readSmallOrPool(false);
  // a claimant write that fails first leaves the read unawaited
  firstView?.catch(() => {});
  let view: ClaimView | undefined;
  let waits = 0;
  // Every fresh read follows members passed over, a lost race or a member given back, so they are bounded by the
  // pool's size.
  for (let reads = 1; ; ) {
    if (view && reads > view.members.length + 2) {
      throw new VdiError(
        'CLAIM_CHANGED',
        `The claims of pool "${pool}" kept changing while claiming; try again.`,
        { retryable: true, details: { namespace, pool } },
      );
    }
    // the turn writes the claimant Leases again when it runs long: the ones to delete are the last ones written
    const held: HeldLocks = { locks: await takeClaimantLocks(ctx, claimantScopes(asked)) };
    let turn: LockedTurn;
    try {
      if (firstView) {
        view = await firstView;
        firstView = undefined;
      }
      turn = await takeTurn(ctx, backend, asked, view, held);
    } catch (error) {
      await giveBackClaimantLocks(ctx, held.locks);
      throw error;
    }
    // never fails: a claimant Lease it cannot delete is told as an event, and the claim answers as it went
    const unlocking = giveBackClaimantLocks(ctx, held.locks);
    if (turn.kind === 'won') {
      // the claimant Lease is deleted while the claim finishes: the member's Lease already holds the claim
      const result = await finishClaim(ctx, backend, turn, asked).finally(() => unlocking);
      if (result) return result;
    } else await unlocking;
    if (turn.kind === 'limited') throw turn.refusal;
    if (turn.kind === 'refused') {
      const { plan } = turn;
      // a cached read may lag, and members passed over may have come free: only a fresh read refuses
      if (view === undefined || view.cached || turn.passedOver) {
        reads += 1;
        view = await readView(ctx, backend, asked, false);
        continue;
      }
      if (plan.code === 'POOL_NOT_FOUND') throw poolNotFound(asked);
      // members released a moment ago are still going down, or the identity's own is being made again: wait a
      // while rather than refuse
      if ((plan.goingDown > 0 || plan.resetting !== undefined) && waits < downChecksOf(ctx)) {
        waits += 1;
        await sleep(downCheckMs);
        view = await readView(ctx, backend, asked, false);
        continue;
      }
      throw noFreeMember(asked, plan, view.members.length, turn.waiters);
    }
    reads += 1;
    // a member that went meanwhile, or a turn overtaken: a small view is read again as it was read
    view = view?.small ? await readSmallOrPool(true) : await readView(ctx, backend, asked, false);
  }
}

function poolNotFound({ namespace, pool }: ClaimAsked): VdiError {
  return new VdiError(
    'POOL_NOT_FOUND',
    `There is no pool "${pool}" in namespace "${namespace}"; list the pools to see what exists.`,
    { details: { namespace, pool } },
  );
}

function noFreeMember(
  asked: ClaimAsked,
  { goingDown, resetting }: Extract<ClaimPlan, { kind: 'refuse' }>,
  members: number,
  waiters: number,
): VdiError {
  const { namespace, pool } = asked;
  if (resetting !== undefined) {
    return new VdiError(
      'NO_FREE_MEMBER',
      `${asked.identity} holds ${resetting} of pool "${pool}" in namespace "${namespace}", which is being made again (Resetting). Claim again in a moment, or release it to get another member.`,
      { retryable: true, details: { namespace, pool, members, resetting } },
    );
  }
  if (waiters > 0) {
    return new VdiError(
      'NO_FREE_MEMBER',
      `pool has no free members for you: ${waiters} claim(s) wait ahead in pool "${pool}" in namespace "${namespace}" and get the free ones first. Claim with wait to join the queue.`,
      { retryable: true, details: { namespace, pool, members, goingDown, waiters } },
    );
  }
  if (goingDown > 0) {
    return new VdiError(
      'NO_FREE_MEMBER',
      `pool has no free members yet: ${goingDown} released member(s) of pool "${pool}" in namespace "${namespace}" are still shutting down. Try again in a moment.`,
      { retryable: true, details: { namespace, pool, members, goingDown } },
    );
  }
  return new VdiError(
    'NO_FREE_MEMBER',
    `pool has no free members: every member of pool "${pool}" in namespace "${namespace}" has a user. Release (unassign) one, or grow the pool.`,
    { details: { namespace, pool, members } },
  );
}
