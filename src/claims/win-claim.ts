import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts } from '../desktop-backend.js';
import type { VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import { holderGroupsAnnotation, leaseHolderLabel, leasePoolLabel, uncheckedHolderGroups } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { memberFromLeaseName } from '../lease-name.js';
import { type ClaimantLock, type ClaimantScope, keepClaimantLock } from './claimant-lock.js';
import { ownClaimsSelector, renewClaimLease, writeClaimLease } from './lease-writes.js';
import { type ClaimOrder, type ClaimPlan, isGoingDown, planClaim } from './plan-claim.js';
import {
  advanceFreePageCursor,
  type FreePagePlace,
  freePageCursor,
  isPoolCacheSynced,
  membersBeingTaken,
  noteMemberWritten,
  poolIndexOf,
  readFreePage,
  readNamedMembers,
  readPool,
  readWaiterLeases,
  resetFreePageCursor,
  startFreePageWalk,
  takeMember,
  withOwnClaims,
} from './pool-reads.js';

// how long a turn waits for the process's Lease cache to see its claimant Lease before it lists its own claims
const ownClaimsCacheWaitMs = 250;

/** What a claim plans from: the pool as read, and how fresh the read is. */
export interface ClaimView {
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
  /** The page shown, and where the next one starts, when there is one. */
  place: FreePagePlace;
  next: string | undefined;
  /** How many pages this walk read. */
  pages: number;
  /** The turn walked again from a fresh first page already. */
  restarted: boolean;
}

// how many pages of members that can be free a walk reads: a turn walks at most twice before it reads the whole pool
const maxSmallPages = 8;
// the members one identity's copies name in one pool: more than this and the claim reads the whole pool
const namedPageSize = 50;

export interface ClaimAsked {
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
export type LockedTurn =
  | {
      kind: 'won';
      plan: Exclude<ClaimPlan, { kind: 'refuse' }>;
      lease: LeaseObject;
      /** A member taken free, as read just before its Lease was written. */
      checked?: MemberFacts;
    }
  | { kind: 'refused'; plan: Extract<ClaimPlan, { kind: 'refuse' }>; waiters: number; passedOver: boolean }
  // the identity holds as many desktops as its limit: it wrote nothing
  | { kind: 'limited'; refusal: VdiError }
  // the claimant Lease was taken over from this claim: it wrote nothing, and tries again
  | { kind: 'overtaken' };

/**
 * The refusal of a limited claim by an identity that holds its limit already, none of it in this pool (a claim
 * there would return that desktop): decided before the turn, so such a refusal writes no Lease. A refusal the
 * cache shows is confirmed by a quorum read, as the cache may lag a release; a claim it allows goes on to its turn,
 * which counts again under the claimant Leases.
 */
export async function limitReachedBeforeTurn(
  ctx: VdiContext,
  asked: ClaimAsked,
): Promise<VdiError | undefined> {
  const { namespace, pool, identity, limit } = asked;
  if (limit === undefined) return undefined;
  const selector = `${leaseHolderLabel}=${shortHash(identity)}`;
  const refusalOf = (leases: LeaseObject[]) => {
    if (leases.some((lease) => lease.metadata.labels?.[leasePoolLabel] === pool)) return undefined;
    return ctx.claimPolicy.refusedByLimit({ leases, identity, limit, now: ctx.clock.now() });
  };
  if (!refusalOf(await ctx.cluster.listLeases(namespace, selector, { cached: true }))) return undefined;
  return refusalOf(await ctx.cluster.listLeases(namespace, selector));
}

/** The claimant Leases a turn holds; one taken over meanwhile is `undefined`. */
export interface HeldLocks {
  locks: (ClaimantLock | undefined)[];
}

/**
 * The claimant Leases a claim's turn takes, the identity's for the namespace first when a limit applies: every
 * claim takes them in this order, so none waits for another that waits for it.
 */
export function claimantScopes(asked: ClaimAsked): ClaimantScope[] {
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
export async function readView(
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
export async function readSmallView(
  ctx: VdiContext,
  backend: DesktopBackend,
  asked: ClaimAsked,
): Promise<ClaimView | undefined> {
  const { namespace, pool, identity } = asked;
  if (asked.order !== 'random' || backend.listMembersByHolder === undefined) return undefined;
  const target = { namespace, pool };
  const readAt = async (place: FreePagePlace) => ({
    place,
    page: await readFreePage(ctx, backend, target, place.from),
  });
  // a page read from a continue token the apiserver no longer serves: a new walk
  const fromStart = () => {
    resetFreePageCursor(ctx, target);
    return readAt(startFreePageWalk(ctx, target));
  };
  const [{ place, page }, named, waiters] = await Promise.all([
    readAt(freePageCursor(ctx, target)).catch(fromStart),
    readNamedMembers(ctx, backend, target, identity, namedPageSize),
    readWaiterLeases(ctx, target),
  ]);
  if (waiters.length > 0 || named === undefined) return undefined;
  return {
    members: unionOf(page.members, named),
    leases: [],
    cached: true,
    small: { named, place, next: page.continue, pages: 1, restarted: false },
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
export async function takeTurn(
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
  // a small view reads a page member's instance only when its VM shows one, and shows the members of the identity's
  // own claims only where their copy is written yet: each of those members is read by name, with its instance (one
  // gone is left out, and the plan finds its claim resetting), since a renewal of a take not handed out yet waits
  // for an instance KubeVirt made that its VM does not show yet
  let small = view?.small ? view : undefined;
  const ownMembers: MemberFacts[] = [];
  if (small) {
    const ownNames = own
      .map((lease) => memberFromLeaseName(lease.metadata.name ?? ''))
      .filter((member): member is string => member !== undefined);
    const read = await Promise.all(ownNames.map((member) => backend.readMember({ namespace, member })));
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
    // free members held for earlier waiters are not this claim's to take
    const waiting = ctx.claimPolicy.heldForWaiters({ kind: backend.kind, members, leases, identity, now });
    const plan = planClaim({
      members,
      leases,
      identity,
      order,
      random: Math.random,
      now,
      exclude: new Set([...lost, ...takenHere, ...waiting.reserved]),
    });
    // A page that offers nothing usable: the next page of the walk. A walk that ends so (its pages show the pool as
    // its first page did, which other claims may have taken since; or a page's continue token expired) is walked
    // once more from a fresh first page, and only then is the whole pool read.
    const pageRead = small?.small;
    const onward = pageRead?.next !== undefined && pageRead.pages < maxSmallPages;
    if (
      small &&
      pageRead &&
      (onward || !pageRead.restarted) &&
      plan.kind === 'refuse' &&
      plan.resetting === undefined
    ) {
      const place: FreePagePlace = onward
        ? { from: pageRead.next, walk: pageRead.place.walk, position: pageRead.place.position + 1 }
        : startFreePageWalk(ctx, { namespace, pool });
      const page = await readFreePage(ctx, backend, { namespace, pool }, place.from).catch(() => undefined);
      small = {
        ...small,
        members: unionOf(page?.members ?? [], pageRead.named, ownMembers),
        small: {
          ...pageRead,
          place,
          next: page?.continue,
          pages: page === undefined ? maxSmallPages : onward ? pageRead.pages + 1 : 1,
          restarted: pageRead.restarted || !onward,
        },
      };
      continue;
    }
    // the pages ran out: the next claim starts a new walk
    if (plan.kind === 'refuse' && small?.small) resetFreePageCursor(ctx, { namespace, pool });
    // Only a claim that would take one more desktop counts against the limit, also one refused for want of a free
    // member (which would wait for one): not one that renews the identity's desktop here, or waits for it to be made
    // again.
    const takesOneMore =
      plan.kind === 'refuse'
        ? plan.code === 'NO_FREE_MEMBER' && plan.resetting === undefined
        : plan.kind !== 'renew';
    if (takesOneMore) {
      const refusal = ctx.claimPolicy.refusedByLimit({ leases: everywhere, identity, limit, now });
      if (refusal) return { kind: 'limited', refusal };
    }
    if (plan.kind === 'refuse') {
      const passedOver = lost.size > 0 || takenHere.size > 0;
      return { kind: 'refused', plan, waiters: waiting.waiters, passedOver };
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
    if (written && small?.small) advanceFreePageCursor(ctx, { namespace, pool }, small.small.place);
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
  // the member and its instance both: KubeVirt may have made an instance its VM does not show yet (a start it acted
  // on after the stop that followed), and a member whose instance is there is going down, not free
  return await backend.readMember({ namespace, member }, since === undefined ? {} : { seenSince: since });
}
