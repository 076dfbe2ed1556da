import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { recordAudit } from '../audit.js';
import { backendFor, type VdiContext } from '../context.js';
import {
  type ClaimToPresent,
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
  type PresentOutcome,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import {
  holderGroupsAnnotation,
  leaseHolderLabel,
  leasePoolLabel,
  sessionIdAnnotation,
  uncheckedHolderGroups,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { lowestLimit, planUserLimit, type UserLimitDecision, userLimitError } from '../limits/user-limit.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { planWaitlist, splitWaiterLeases } from '../waitlist/plan-waitlist.js';
import {
  type ClaimantLock,
  type ClaimantScope,
  giveBackClaimantLocks,
  keepClaimantLock,
  takeClaimantLocks,
} from './claimant-lock.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { failureReason } from './failure-reason.js';
import { downCheckMs, downChecksOf, finishTakeover } from './finish-takeover.js';
import { shortHash } from './hash.js';
import { memberFromLeaseName } from './lease-name.js';
import { deleteLeaseAsRead, ownClaimsSelector, renewClaimLease, writeClaimLease } from './lease-writes.js';
import { type ClaimOrder, type ClaimPlan, isGoingDown, planClaim } from './plan-claim.js';
import {
  freePageCursor,
  isPoolCacheSynced,
  membersBeingTaken,
  noteMemberWritten,
  poolIndexOf,
  readFreePage,
  readPool,
  readWaiterLeases,
  setFreePageCursor,
  takeMember,
  withOwnClaims,
} from './pool-reads.js';
import { holdsStill, startClaimedMember } from './start-desktop.js';

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
  groups: z.array(identitySchema).optional(),
  asAdmin: z.boolean().optional(),
  maxDesktopsPerUser: z.number().int().min(0).optional(),
});

/** How a claim is made: by whom, which member first, and whether the pool's entitlement is asked. */
export interface ClaimHow {
  actor: string | undefined;
  order: ClaimOrder;
  /** An administrator's assign hands out any pool, so it does not ask the entitlement hook. */
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
      const limits = await ctx.checkEntitlement(ctx, { ...target, groups, isAdmin: asAdmin ?? false });
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
      limit: lowestLimit(maxDesktopsPerUser || undefined, poolLimit),
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

// how long a turn waits for the process's Lease cache to see its claimant Lease before it lists its own claims
const ownClaimsCacheWaitMs = 250;

/** What a claim plans from: the pool as read, and how fresh the read is. */
interface ClaimView {
  members: MemberFacts[];
  leases: LeaseObject[];
  cached: boolean;
  /** Set when the view is a page of the members that can be free, not the whole pool. */
  small?: SmallRead;
}

/** A view of a pool's members that can matter to one claim, read a page at a time. */
interface SmallRead {
  /** The members whose presentation copy names the identity: its own, or a v0.6.0 assignment to adopt. */
  named: MemberFacts[];
  /** Where the page shown starts (`undefined`: the first), and where the next one starts, when there is one. */
  from: string | undefined;
  next: string | undefined;
  pages: number;
}

// how many pages of members that can be free a turn reads before it reads the whole pool
const maxSmallPages = 8;
// the members one identity's copies name in one pool: more than this and the claim reads the whole pool
const namedPageSize = 50;

interface ClaimAsked {
  namespace: string;
  pool: string;
  identity: string;
  order: ClaimOrder;
  actor: string;
  /** The `corral.dev/vdi-holder-groups` the claim records. */
  holderGroups: string;
  /** How many desktops the identity may hold in the namespace; `undefined` for no limit. */
  limit: number | undefined;
}

/** How a claim's turn under the claimant Lease ended. */
type LockedTurn =
  | {
      kind: 'won';
      plan: Exclude<ClaimPlan, { kind: 'refuse' }>;
      lease: LeaseObject;
      /** A member taken free, as read just before its Lease was written. */
      checked?: MemberFacts;
    }
  | { kind: 'refused'; plan: Extract<ClaimPlan, { kind: 'refuse' }>; waiters: number; passedOver: boolean }
  // the identity holds as many desktops as its limit: it wrote nothing
  | { kind: 'limited'; refusal: Extract<UserLimitDecision, { kind: 'refused' }> }
  // the claimant Lease was taken over from this claim: it wrote nothing, and tries again
  | { kind: 'overtaken' };

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
  if (refusal) throw userLimitError(asked.identity, refusal);
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
    if (turn.kind === 'limited') throw userLimitError(asked.identity, turn.refusal);
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

/**
 * The refusal of a limited claim by an identity that holds its limit already, none of it in this pool (a claim
 * there would return that desktop): decided before the turn, so such a refusal writes no Lease. A refusal the
 * cache shows is confirmed by a quorum read, as the cache may lag a release; a claim it allows goes on to its turn,
 * which counts again under the claimant Leases.
 */
async function limitReachedBeforeTurn(
  ctx: VdiContext,
  asked: ClaimAsked,
): Promise<Extract<UserLimitDecision, { kind: 'refused' }> | undefined> {
  const { namespace, pool, identity, limit } = asked;
  if (limit === undefined) return undefined;
  const selector = `${leaseHolderLabel}=${shortHash(identity)}`;
  const refusalOf = (leases: LeaseObject[]) => {
    if (leases.some((lease) => lease.metadata.labels?.[leasePoolLabel] === pool)) return undefined;
    const decision = planUserLimit({ leases, identity, limit, now: ctx.clock.now() });
    return decision.kind === 'refused' ? decision : undefined;
  };
  if (!refusalOf(await ctx.cluster.listLeases(namespace, selector, { cached: true }))) return undefined;
  return refusalOf(await ctx.cluster.listLeases(namespace, selector));
}

/** The claimant Leases a turn holds; one taken over meanwhile is `undefined`. */
interface HeldLocks {
  locks: (ClaimantLock | undefined)[];
}

/**
 * The claimant Leases a claim's turn takes, the identity's for the namespace first when a limit applies: every
 * claim takes them in this order, so none waits for another that waits for it.
 */
function claimantScopes(asked: ClaimAsked): ClaimantScope[] {
  const { namespace, pool, identity } = asked;
  const poolScope = { namespace, pool, identity };
  return asked.limit === undefined ? [poolScope] : [{ namespace, identity }, poolScope];
}

/** Writes the held claimant Leases again where due; `false` when one was taken over and is held no more. */
async function keepLocks(ctx: VdiContext, held: HeldLocks): Promise<boolean> {
  held.locks = await Promise.all(held.locks.map((lock) => lock && keepClaimantLock(ctx, lock)));
  return held.locks.every((lock) => lock !== undefined);
}

/**
 * Reads what a claim plans from: the pool from the process's watch caches (or the apiserver's), shared with the
 * claims of this process, or a quorum read of the whole pool.
 */
async function readView(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
  cached: boolean,
): Promise<ClaimView> {
  const read = await readPool(ctx, backend, { namespace: asked.namespace, pool: asked.pool }, { cached });
  return { members: read.members, leases: read.leases, cached };
}

/**
 * The members of a pool that can matter to a claim in random order, read without the whole pool: the first page of
 * members whose presentation copy names nobody, and those whose copy names the identity; no claim Lease but the
 * identity's own, read under the claimant Lease, so every member of the page looks free and its Lease create
 * decides. `undefined` when the claim must plan over the whole pool: `assign` (lowest first), a backend without
 * presentation copies to select by, a pool with waiters (their queue is planned over the whole pool), or an
 * identity named on more members than a page holds.
 */
async function readSmallView(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
): Promise<ClaimView | undefined> {
  const { namespace, pool, identity } = asked;
  if (asked.order !== 'random' || backend.listMembersByHolder === undefined) return undefined;
  const target = { namespace, pool };
  const from = freePageCursor(ctx, target);
  // a page read from a continue token the apiserver no longer serves: from the first page
  const fromStart = () => {
    setFreePageCursor(ctx, target, undefined);
    return readFreePage(ctx, backend, target, undefined);
  };
  const [page, named, waiters] = await Promise.all([
    from === undefined ? fromStart() : readFreePage(ctx, backend, target, from).catch(fromStart),
    backend.listMembersByHolder(namespace, pool, { holder: identity, limit: namedPageSize }),
    readWaiterLeases(ctx, target),
  ]);
  if (waiters.length > 0 || named.continue !== undefined) return undefined;
  return {
    members: unionOf(page.members, named.members),
    leases: [],
    cached: true,
    small: { named: named.members, from, next: page.continue, pages: 1 },
  };
}

/** Members of several reads, each once: the later read of a member wins. */
function unionOf(...reads: MemberFacts[][]): MemberFacts[] {
  const byName = new Map<string, MemberFacts>();
  for (const members of reads) for (const member of members) byName.set(member.member, member);
  return [...byName.values()];
}

/**
 * One turn under the claimant Lease: the identity's own claims read fresh, then the plan; a take writes the
 * member's Lease, and after a lost race tries the next member the same view shows free.
 */
async function takeTurn(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
  view: ClaimView | undefined,
  held: HeldLocks,
): Promise<LockedTurn> {
  const { namespace, pool, identity, order, limit } = asked;
  // Every claim of the identity that finished wrote its member's Lease before it deleted the claimant Lease, so
  // before this claim created it: a list not older than that write shows them all, from a watch cache. The
  // process's Lease cache sees the claimant write's own event a moment later; the apiserver answers if it does not.
  // Under a limit, the identity's claims of every pool are listed, to count them; its own in the pool are among them.
  const holderHash = shortHash(identity);
  const everywhere = await ctx.cluster.listLeases(
    namespace,
    limit === undefined ? ownClaimsSelector(pool, identity) : `${leaseHolderLabel}=${holderHash}`,
    {
      // the last claimant Lease was written last
      notOlderThan: held.locks.at(-1)?.lease.metadata.resourceVersion ?? '',
      cacheWaitMs: ownClaimsCacheWaitMs,
    },
  );
  const own = everywhere.filter((lease) => lease.metadata.labels?.[leasePoolLabel] === pool);
  // a small view shows the members of the identity's own claims only where their copy is written yet: each of the
  // others is read by name (one gone is left out, and the plan finds its claim resetting)
  let small = view?.small ? view : undefined;
  const ownMembers: MemberFacts[] = [];
  if (small) {
    const shown = new Set(small.members.map((member) => member.member));
    const unshown = own
      .map((lease) => memberFromLeaseName(lease.metadata.name ?? ''))
      .filter((member): member is string => member !== undefined && !shown.has(member));
    const read = await Promise.all(unshown.map((member) => backend.readMember({ namespace, member })));
    for (const member of read) if (member?.pool === pool) ownMembers.push(member);
    small = { ...small, members: unionOf(small.members, ownMembers) };
  }
  // The process's synced caches cost no request, and show what its other claims took since the view was read;
  // their index of the pool gives a claim in random order the few members that can matter to it, at once.
  const fromCaches = () => view === undefined || (view.cached && isPoolCacheSynced(ctx, namespace));
  const excerptNow = (exclude: ReadonlySet<string>, now: Date) => {
    const index =
      order === 'random' && fromCaches() ? poolIndexOf(ctx, backend, { namespace, pool }) : undefined;
    return index?.excerpt({ identity, own, exclude, now, random: Math.random });
  };
  // members this turn lost a race for: it tries others before reading again
  const lost = new Set<string>();
  for (;;) {
    // a turn that took long writes the claimant Lease again first, so no waiting claim takes it over; before the
    // plan, so that nothing is awaited between the pick and its note among the members being taken, which the
    // process's other claims pass over
    if (!(await keepLocks(ctx, held))) return { kind: 'overtaken' };
    let takenHere = membersBeingTaken(ctx, { namespace, pool });
    let now = ctx.clock.now();
    let current = excerptNow(new Set([...lost, ...takenHere]), now);
    if (current === undefined) {
      current =
        small ?? (view !== undefined && !fromCaches() ? view : await readView(ctx, backend, asked, true));
      // what the process's other claims took while this one read
      takenHere = membersBeingTaken(ctx, { namespace, pool });
      now = ctx.clock.now();
    }
    const members = current.members;
    const leases = withOwnClaims(current.leases, own, holderHash);
    // the waitlist's hook: free members held for earlier waiters are not this claim's to take; without a live
    // waiter none are, and its plan over the whole pool is spared
    const waitlist =
      splitWaiterLeases(leases, backend.kind, now).live.length === 0
        ? { reserved: new Set<string>(), queue: [] }
        : planWaitlist({ kind: backend.kind, members, leases, identity, now });
    const plan = planClaim({
      members,
      leases,
      identity,
      order,
      random: Math.random,
      now,
      exclude: new Set([...lost, ...takenHere, ...waitlist.reserved]),
    });
    // a page that offers nothing usable: the next page, until the pages end and the whole pool is read (as it is
    // when a page's continue token has expired)
    const pageRead = small?.small;
    if (
      small &&
      pageRead?.next !== undefined &&
      pageRead.pages < maxSmallPages &&
      plan.kind === 'refuse' &&
      plan.resetting === undefined
    ) {
      const page = await readFreePage(ctx, backend, { namespace, pool }, pageRead.next).catch(
        () => undefined,
      );
      small = {
        ...small,
        members: unionOf(page?.members ?? [], pageRead.named, ownMembers),
        small: {
          ...pageRead,
          from: pageRead.next,
          next: page?.continue,
          pages: page ? pageRead.pages + 1 : maxSmallPages,
        },
      };
      continue;
    }
    // the pages ran out: the next claim starts from the first page again
    if (plan.kind === 'refuse' && small?.small) setFreePageCursor(ctx, { namespace, pool }, undefined);
    // Only a claim that would take one more desktop counts against the limit, also one refused for want of a free
    // member (which would wait for one): not one that renews the identity's desktop here, or waits for it to be made
    // again.
    const takesOneMore =
      plan.kind === 'refuse'
        ? plan.code === 'NO_FREE_MEMBER' && plan.resetting === undefined
        : plan.kind !== 'renew';
    if (takesOneMore) {
      const allowed = planUserLimit({ leases: everywhere, identity, limit, now });
      if (allowed.kind === 'refused') return { kind: 'limited', refusal: allowed };
    }
    if (plan.kind === 'refuse') {
      const passedOver = lost.size > 0 || takenHere.size > 0;
      return { kind: 'refused', plan, waiters: waitlist.queue.length, passedOver };
    }
    if (plan.kind === 'renew') {
      const renewed = await renewClaimLease(ctx, plan.lease, refreshedGroupsOf(plan.lease, asked));
      // released or changed meanwhile: read again
      return renewed ? { kind: 'won', plan, lease: renewed } : { kind: 'overtaken' };
    }
    const target = {
      kind: backend.kind,
      namespace,
      pool,
      member: plan.member.member,
      identity,
      holderGroups: asked.holderGroups,
      source: plan.member.ephemeral ? plan.member.source : undefined,
    };
    // A view may show a member's Lease gone before the member going down (a release asks the stop first, then
    // deletes the Lease): look at the member as of that view before writing, so no Lease is written to be given back.
    // The look is part of the take, so the process's other claims pass the member over from the pick on.
    const taken = await takeMember(ctx, target, async () => {
      let checked: MemberFacts | undefined;
      if (isCheckedTake(plan)) {
        checked = await readMemberToTake(ctx, backend, plan, fromCaches());
        if (checked === undefined || checked.deleting || isGoingDown(checked)) return undefined;
        // presented since the view showed it free (a page read from an older snapshot): its Lease is written
        if (plan.kind === 'create' && !isPresented(plan.member) && isPresented(checked)) return undefined;
      }
      return {
        written: await writeClaimLease(ctx, target, plan.kind === 'replace' ? plan : undefined),
        checked,
      };
    });
    if (taken === undefined) {
      lost.add(target.member);
      continue;
    }
    const { written, checked } = taken;
    noteMemberWritten(ctx, target);
    if (written && small?.small) setFreePageCursor(ctx, { namespace, pool }, small.small.from);
    if (written) return { kind: 'won', plan, lease: written, ...(checked ? { checked } : {}) };
    ctx.events.emit('claim-conflict', { desktopId: plan.member.desktopId, identity });
    lost.add(target.member);
  }
}

/**
 * The holder groups a retry writes with its renewal: the groups the holder came with now, when the claim records
 * others; an unchecked claim stays unchecked, and a retry that asks no entitlement changes nothing.
 */
function refreshedGroupsOf(lease: LeaseObject, asked: ClaimAsked): string | undefined {
  const recorded = lease.metadata.annotations?.[holderGroupsAnnotation];
  if (asked.holderGroups === uncheckedHolderGroups || recorded === uncheckedHolderGroups) return undefined;
  return recorded === asked.holderGroups ? undefined : asked.holderGroups;
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
async function finishClaim(
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
      // The view may be older than the Lease this claim won: the last holder's guest may still be going down, or
      // the member may be being deleted (KubeVirt shows `Terminating` only a moment later).
      if (fresh === undefined || fresh.deleting || isGoingDown(fresh)) {
        await deleteLeaseAsRead(ctx, lease);
        return undefined;
      }
      member = fresh;
      start = fresh.power !== 'running';
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

/** Whether a member shows a presentation copy (anyone's). */
function isPresented(member: MemberFacts): boolean {
  return member.presentation.holder !== undefined || member.presentation.label !== undefined;
}

/** Whether a plan takes a member that is read before its Lease is written and again after: free, or stale without a reset. */
function isCheckedTake(plan: Exclude<ClaimPlan, { kind: 'refuse' }>): boolean {
  return !plan.resetDue && (plan.kind === 'create' || (plan.kind === 'replace' && !plan.reset));
}

/**
 * Reads a member a claim is about to take: as the process's caches show it when they hold together on it (the
 * presentation is then written conditional on exactly that, which proves it), otherwise as {@link readWonMember}
 * would after the win, from caches that have seen what the Leases' cache has, or fresh.
 */
async function readMemberToTake(
  ctx: VdiContext,
  backend: DesktopBackend,
  plan: Exclude<ClaimPlan, { kind: 'refuse' }>,
  fromCaches: boolean,
): Promise<MemberFacts | undefined> {
  const { namespace, member } = plan.member;
  const cached = fromCaches ? backend.cachedMember?.(plan.member) : undefined;
  if (cached) return cached;
  const since = fromCaches ? ctx.cluster.cachesOf(namespace)?.leases.resourceVersion() : undefined;
  return await backend.readMember(
    { namespace, member },
    since === undefined ? { instanceWhenShown: true } : { seenSince: since },
  );
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
