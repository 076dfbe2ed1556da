import { setTimeout as sleep } from 'node:timers/promises';
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
import { claimingAnnotation, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { planWaitlist, splitWaiterLeases } from '../waitlist/plan-waitlist.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { downCheckMs, downChecks, finishTakeover } from './finish-takeover.js';
import { shortHash } from './hash.js';
import {
  claimantLeaseName,
  deleteLeaseAsRead,
  ownClaimsSelector,
  pointClaimantLease,
  renewClaimLease,
  writeClaimLease,
} from './lease-writes.js';
import { type ClaimOrder, type ClaimPlan, isGoingDown, planClaim } from './plan-claim.js';
import {
  isPoolCacheSynced,
  membersBeingTaken,
  noteMemberWritten,
  readPool,
  takeMember,
  withOwnClaims,
} from './pool-reads.js';
import { isReleasing } from './releasing-mark.js';
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
  /** The member was already running when claimed (a warm spare), so the claim did not have to start it. */
  warm: boolean;
  /** Set when the desktop is claimed but did not start; start it again once the cause is fixed. */
  startError?: string;
  /** The claim's Lease as the claim wrote it, for front ends that show its session without reading it again. */
  lease: LeaseObject;
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
 * @throws {@link VdiError} `NO_FREE_MEMBER` (retryable while members are going down, or while the identity's own
 *   member is being made again), `POOL_NOT_FOUND`, `CLAIM_CHANGED` (retryable) when the pool's
 *   claims kept changing, `STOP_FAILED` / `RECREATE_FAILED` (retryable) when a takeover's reset fails or its
 *   previous instance is still going down (the claim is held, still marked reset-due), `INVALID_INPUT`.
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
    const result = await claimMember(ctx, backend, {
      namespace,
      pool,
      identity,
      order: how.order,
      actor: user,
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
 * What a claim plans from: the pool as read, the identity's claimant Lease as read fresh (`undefined` also when a
 * view from the synced caches did not read it), and how fresh the read is.
 */
interface ClaimView {
  members: MemberFacts[];
  leases: LeaseObject[];
  claimant: LeaseObject | undefined;
  cached: boolean;
}

interface ClaimAsked {
  namespace: string;
  pool: string;
  identity: string;
  order: ClaimOrder;
  actor: string;
}

/**
 * Reads what a claim plans from. A cached read takes the pool from this process's watch caches when they are
 * synced (the identity's own claims included: this process's writes reach them at once) and does not read the
 * claimant Lease, whose create fails when one exists; without them, from the apiserver's watch cache with the
 * identity's own claims put over it from a small quorum read, and the claimant Lease read fresh. A fresh read is
 * a quorum read of the pool and of the claimant Lease.
 */
async function readView(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
  cached: boolean,
): Promise<ClaimView> {
  const { namespace, pool, identity } = asked;
  const local = cached && isPoolCacheSynced(ctx, namespace);
  const [read, own, claimant] = await Promise.all([
    readPool(ctx, backend, { namespace, pool }, { cached }),
    cached && !local ? ctx.cluster.listLeases(namespace, ownClaimsSelector(pool, identity)) : undefined,
    local ? undefined : ctx.cluster.getLease(namespace, claimantLeaseName(pool, identity)),
  ]);
  const leases = own ? withOwnClaims(read.leases, own, shortHash(identity)) : read.leases;
  return { members: read.members, leases, claimant, cached };
}

async function claimMember(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
): Promise<ClaimResult> {
  const { namespace, pool, identity, order } = asked;
  let view = await readView(ctx, backend, asked, true);
  // members this claim lost a race for since the view was read: it tries others before reading again
  const lost = new Set<string>();
  let waits = 0;
  // the resourceVersion of the claimant Lease as this claim last wrote it
  let pointedAt: string | undefined;
  const readAgain = async () => {
    lost.clear();
    view = await readView(ctx, backend, asked, false);
  };
  // Every fresh read follows a lost race or a change of the identity's claimant Lease, so they are bounded by the
  // pool's size.
  for (let reads = 1; ; ) {
    const claiming = view.claimant?.metadata.annotations?.[claimingAnnotation];
    const prefer = claiming !== undefined && !lost.has(claiming) ? claiming : undefined;
    const takenHere = membersBeingTaken(ctx, { namespace, pool });
    // the waitlist's hook: free members held for earlier waiters are not this claim's to take; without a live
    // waiter none are, and its plan over the whole pool is spared
    const now = ctx.clock.now();
    const waitlist =
      splitWaiterLeases(view.leases, backend.kind, now).live.length === 0
        ? { reserved: new Set<string>(), queue: [] }
        : planWaitlist({ kind: backend.kind, members: view.members, leases: view.leases, identity, now });
    const planFrom = (leases: LeaseObject[]) =>
      planClaim({
        members: view.members,
        leases,
        identity,
        order,
        random: Math.random,
        now: ctx.clock.now(),
        prefer,
        exclude: new Set([...lost, ...takenHere, ...waitlist.reserved]),
      });
    const plan = planFrom(view.leases);
    if (reads > view.members.length + 2) {
      throw new VdiError(
        'CLAIM_CHANGED',
        `The claims of pool "${pool}" kept changing while claiming; try again.`,
        { retryable: true, details: { namespace, pool } },
      );
    }
    if (plan.kind === 'refuse') {
      // a cached read may lag, and members passed over may have come free: only a fresh read refuses
      if (view.cached || lost.size > 0 || takenHere.size > 0) {
        reads += 1;
        await readAgain();
        continue;
      }
      if (plan.code === 'POOL_NOT_FOUND') throw poolNotFound(asked);
      // members released a moment ago are still going down, or the identity's own is being made again: wait a
      // while rather than refuse
      if ((plan.goingDown > 0 || plan.resetting !== undefined) && waits < downChecks) {
        waits += 1;
        await sleep(downCheckMs);
        await readAgain();
        continue;
      }
      // a claimant Lease this claim pointed at a member it then lost names nothing worth keeping
      if (view.claimant) await deleteLeaseAsRead(ctx, view.claimant);
      throw noFreeMember(asked, plan, view.members.length, waitlist.queue.length);
    }
    if (plan.kind === 'renew') {
      const renewed = await renewClaimLease(ctx, plan.lease);
      // released or changed meanwhile: plan again
      const result = renewed && (await finishClaim(ctx, backend, plan, renewed, asked, undefined));
      if (result) return result;
      reads += 1;
      await readAgain();
      continue;
    }
    const target = { kind: backend.kind, namespace, pool, member: plan.member.member, identity };
    const taken = await takeMember(ctx, target, async () => {
      // The identity's claims meet at its claimant Lease, so concurrent ones all take the member it names.
      const lock =
        prefer === target.member ? view.claimant : await pointClaimantLease(ctx, target, view.claimant);
      if (!lock) return { lock };
      const heldAlong =
        lock === view.claimant ||
        (pointedAt !== undefined && view.claimant?.metadata.resourceVersion === pointedAt);
      pointedAt = lock.metadata.resourceVersion;
      if (!heldAlong) {
        // A claim of this identity that finished after the view was read let go of the claimant Lease, so only a
        // read of the own claims made since shows the member it won; while this claim holds the Lease none can
        // finish. It wrote that member's Lease before it let go, and so before this claim's write: a list not older
        // than this write shows it, from a watch cache, without a quorum read.
        const own = await ctx.cluster.listLeases(namespace, ownClaimsSelector(pool, identity), {
          notOlderThan: lock.metadata.resourceVersion ?? '',
        });
        const planned = view.leases;
        view.leases = withOwnClaims(view.leases, own, shortHash(identity));
        // no claim of the identity in the view or the fresh list: the plan stands, and planning again is spared
        const same = own.length === 0 && view.leases.length === planned.length;
        // a held member is renewed; one that is being made again is waited for, not doubled
        if (!same && planFrom(view.leases).kind !== plan.kind) return { lock, held: true };
      }
      return {
        lock,
        written: await writeClaimLease(ctx, target, plan.kind === 'replace' ? plan : undefined),
      };
    });
    const { lock, written } = taken;
    if (lock && !taken.held) noteMemberWritten(ctx, target);
    if (!lock) {
      // another claim of this identity pointed it first: read again and take its member
      reads += 1;
      await readAgain();
      continue;
    }
    if (taken.held) {
      // the identity already holds a member: let go of the claimant Lease and plan again with its claim in view
      await deleteLeaseAsRead(ctx, lock);
      continue;
    }
    if (!written) {
      ctx.events.emit('claim-conflict', { desktopId: plan.member.desktopId, identity });
      view.claimant = lock;
      if (target.member === prefer) {
        // the member another claim of this identity chose: read again to find what became of it
        reads += 1;
        await readAgain();
      } else {
        // lost the race: try another member this view shows free before reading again
        lost.add(target.member);
        // the process's caches cost no request, and show what its other claims took since the view was read
        if (view.cached && isPoolCacheSynced(ctx, namespace)) {
          view = { ...(await readView(ctx, backend, asked, true)), claimant: view.claimant };
        }
      }
      continue;
    }
    // the won member's read does not wait for the claimant Lease's delete: both go out at once
    const reading = readWonMember(backend, plan, written);
    reading?.catch(() => {});
    if (await deleteLeaseAsRead(ctx, lock)) {
      const result = await finishClaim(ctx, backend, plan, written, asked, reading);
      if (result) return result;
    } else {
      // Another claim of this identity moved the claimant Lease to another member meanwhile: give this one
      // back and read again, so the identity ends with the member the claimant Lease names.
      await deleteLeaseAsRead(ctx, written);
    }
    reads += 1;
    await readAgain();
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
      `Pool "${pool}" in namespace "${namespace}" has no member free for you: ${waiters} claim(s) wait ahead and get the free ones first. Claim with wait to join the queue.`,
      { retryable: true, details: { namespace, pool, members, goingDown, waiters } },
    );
  }
  if (goingDown > 0) {
    return new VdiError(
      'NO_FREE_MEMBER',
      `Pool "${pool}" in namespace "${namespace}" has no free member yet: ${goingDown} released member(s) are still shutting down. Try again in a moment.`,
      { retryable: true, details: { namespace, pool, members, goingDown } },
    );
  }
  return new VdiError(
    'NO_FREE_MEMBER',
    `Pool "${pool}" in namespace "${namespace}" has no free member: every member has a user. Release (unassign) one, or grow the pool.`,
    { details: { namespace, pool, members } },
  );
}

/**
 * Reads a member a claim took free or stale again, as {@link finishClaim} checks it; `undefined` when the plan needs
 * no such read (a renewal, an adoption, or a takeover, whose reset waits for the member itself).
 */
function readWonMember(
  backend: DesktopBackend,
  plan: Exclude<ClaimPlan, { kind: 'refuse' }>,
  lease: LeaseObject,
): Promise<MemberFacts | undefined> | undefined {
  if ((plan.kind === 'replace' && plan.reset) || plan.resetDue) return undefined;
  if (plan.kind !== 'create' && plan.kind !== 'replace') return undefined;
  // Caches that have seen the won Lease's resourceVersion show every change before the win: the release that
  // freed the member deleted its Lease only after it asked the member to stop.
  const { resourceVersion } = lease.metadata;
  return backend.readMember(
    { namespace: plan.member.namespace, member: plan.member.member },
    resourceVersion === undefined ? {} : { seenSince: resourceVersion },
  );
}

/**
 * Resets a taken-over member when due, or checks a newly taken one as `reading` read it again, presents the claim
 * and starts the member; `undefined` when the member is gone or its previous instance is still going down, and its
 * Lease was given back.
 */
async function finishClaim(
  ctx: VdiContext,
  backend: DesktopBackend,
  plan: Exclude<ClaimPlan, { kind: 'refuse' }>,
  written: LeaseObject,
  asked: ClaimAsked,
  reading: Promise<MemberFacts | undefined> | undefined,
): Promise<ClaimResult | undefined> {
  const { identity } = asked;
  let member = plan.member;
  let lease = written;
  let start = plan.start;
  if ((plan.kind === 'replace' && plan.reset) || plan.resetDue) {
    // The previous holder's guest may still run: the new holder gets the member only once it is reset.
    ({ facts: member, lease } = await finishTakeover(ctx, backend, {
      facts: member,
      lease,
      actor: asked.actor,
    }));
    start = true;
  } else if (reading) {
    const fresh = await reading.catch(async (error: unknown) => {
      // unable to tell whether the member is ready, the claim gives it back rather than hold it and fail
      await deleteLeaseAsRead(ctx, lease);
      throw error;
    });
    // The view may be older than the Lease this claim won: the last holder's guest may still be going down.
    if (fresh === undefined || isGoingDown(fresh)) {
      await deleteLeaseAsRead(ctx, lease);
      return undefined;
    }
    member = fresh;
    start = fresh.power !== 'running';
  }
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
  if (!(await confirmHeld(ctx, backend, { member, lease, identity }))) return undefined;
  const startError = start ? await startMember(ctx, backend, member, identity) : undefined;
  // Built from what the claim wrote, not read back: a failing read must not turn a held claim into an error.
  const view = describeDesktop(member, lease);
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
  // a read that fails leaves the claim as written: as far as anyone can tell it holds, and it goes on
  const current = await ctx.cluster.getLease(member.namespace, lease.metadata.name ?? '').catch(() => lease);
  const session = (read: LeaseObject) => read.metadata.annotations?.[sessionIdAnnotation];
  if (current && session(current) === session(lease) && !isReleasing(current)) return true;
  if (current?.spec.holderIdentity !== identity) {
    // best-effort: a copy left on a stopped member without a Lease reads as free, and the next claim overwrites it
    await backend.clearPresentation(member, identity).catch(() => false);
  }
  return false;
}
