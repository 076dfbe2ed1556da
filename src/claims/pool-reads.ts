import type { VdiContext } from '../context.js';
import type { DesktopBackend, MemberFacts, MembersPage } from '../desktop-backend.js';
import { leaseHolderLabel, leaseNamePrefix, leasePoolLabel, waiterLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { sanitizeLabelValue } from '../sanitize-label-value.js';
import { PoolClaimIndex } from './pool-index.js';

/** A pool as one read saw it: its members and their claim Leases. */
export interface PoolRead {
  members: MemberFacts[];
  leases: LeaseObject[];
}

/** What the claims of one process share per pool: the reads in flight, and the members being taken now. */
interface PoolShare {
  cached: Promise<PoolRead> | undefined;
  fresh: Promise<PoolRead> | undefined;
  /** The fresh read to issue once the one in flight is done, for the claims that asked meanwhile. */
  nextFresh: Promise<PoolRead> | undefined;
  taking: Map<string, Promise<void>>;
  /**
   * Members whose Lease a claim of this process found written (won or lost) that no read has shown yet, each with
   * the number of its note, so a fresh read clears only the notes made before it was issued.
   */
  written: Map<string, number>;
  notes: number;
  /** The pages of members that can be free being read now, by where each starts (`''` for the first). */
  pages: Map<string, Promise<MembersPage>>;
  /** The page furthest along the latest walk that gave a claim of this process a member: the next claim reads from there. */
  cursor: FreePagePlace;
  /** How many walks of pages the claims of this process started, each from a first page. */
  walks: number;
  /** The read of the pool's waiter Leases in flight. */
  waiters: Promise<LeaseObject[]> | undefined;
  /** The read of members named for several identities not issued yet, which the claims that ask now join. */
  namedNext: NamedRead | undefined;
  /** The last read of named members issued; the next one is issued once it is answered. */
  namedLast: Promise<unknown> | undefined;
}

/** One read of the members whose presentation copy names one of `holders`. */
interface NamedRead {
  holders: string[];
  read: Promise<MembersPage>;
}

// per adapter, so contexts with their own cluster share nothing
const shares = new WeakMap<object, Map<string, PoolShare>>();

function shareOf(ctx: VdiContext, namespace: string, pool: string): PoolShare {
  let byPool = shares.get(ctx.cluster);
  if (byPool === undefined) {
    byPool = new Map();
    shares.set(ctx.cluster, byPool);
  }
  const key = `${namespace}/${pool}`;
  let share = byPool.get(key);
  if (share === undefined) {
    share = {
      cached: undefined,
      fresh: undefined,
      nextFresh: undefined,
      taking: new Map(),
      written: new Map(),
      notes: 0,
      pages: new Map(),
      cursor: { from: undefined, walk: 0, position: 0 },
      walks: 0,
      waiters: undefined,
      namedNext: undefined,
      namedLast: undefined,
    };
    byPool.set(key, share);
  }
  return share;
}

/**
 * Whether this process's watch caches of `namespace` are synced, so a cached read of its claim Leases and members
 * costs no request and already holds every write of this process.
 */
export function isPoolCacheSynced(ctx: VdiContext, namespace: string): boolean {
  const caches = ctx.cluster.cachesOf(namespace);
  return caches !== undefined && Object.values(caches).every((cache) => cache.isSynced());
}

/** A pool's claim index, and the pool's waiter Leases, whose plan needs the whole pool. */
interface IndexedPool {
  index: PoolClaimIndex;
  waiters: Set<string>;
}

// per set of caches, so caches started again build their indexes again
const indexes = new WeakMap<object, Map<string, IndexedPool>>();

/**
 * The claim index of a pool ({@link PoolClaimIndex}), kept up to date from this process's synced watch caches of
 * its namespace; `undefined` without them, for a backend that does not follow its members, or while the pool has
 * waiters, whose queue is planned over the whole pool.
 */
export function poolIndexOf(
  ctx: VdiContext,
  backend: DesktopBackend,
  target: { namespace: string; pool: string },
): PoolClaimIndex | undefined {
  const { namespace, pool } = target;
  const caches = ctx.cluster.cachesOf(namespace);
  if (caches === undefined || !isPoolCacheSynced(ctx, namespace)) return undefined;
  let byPool = indexes.get(caches);
  if (byPool === undefined) {
    byPool = new Map();
    indexes.set(caches, byPool);
  }
  const key = `${backend.kind}/${pool}`;
  let indexed = byPool.get(key);
  if (indexed === undefined) {
    // the index is made once both feeds are subscribed, and they tell it nothing before: it reads all it starts from
    let index: PoolClaimIndex | undefined;
    const follower = backend.followMembers?.(namespace, pool, (member) => index?.changed(member));
    if (follower === undefined) return undefined;
    const { leases } = caches;
    const ofPool = (lease: LeaseObject) => lease.metadata.labels?.[leasePoolLabel] === pool;
    const waiters = new Set(
      (leases.list(`${leasePoolLabel}=${pool}`) ?? [])
        .filter((lease) => lease.metadata.labels?.[waiterLabel] !== undefined)
        .map((lease) => lease.metadata.name ?? ''),
    );
    leases.onChange(({ type, object }) => {
      if (!ofPool(object)) return;
      const name = object.metadata.name ?? '';
      if (object.metadata.labels?.[waiterLabel] !== undefined) {
        if (type === 'deleted') waiters.delete(name);
        else waiters.add(name);
        return;
      }
      const member = memberFromLeaseName(name);
      if (member !== undefined) index?.changed(member);
    });
    index = new PoolClaimIndex({
      names: follower.names,
      member: follower.member,
      lease(member) {
        const lease = leases.get(leaseNameFor(member));
        return lease && ofPool(lease) ? lease : undefined;
      },
    });
    indexed = { index, waiters };
    byPool.set(key, indexed);
  }
  return indexed.waiters.size === 0 ? indexed.index : undefined;
}

/**
 * How a claim reads a pool: `cached` from this process's watch caches of the namespace when they run and are
 * synced (no request at all), else from the apiserver's watch cache; or fresh (a quorum read). Either cached view
 * may lag other processes' claims: the Lease create that follows decides, so a lag costs a lost race, never a
 * second holder.
 */
export interface PoolReadHow {
  cached: boolean;
}

/**
 * Reads a pool's members and claim Leases, sharing the read with the claims of this process that need the same.
 * A cached read joins any cached read in flight, as both may lag alike. A fresh read first waits for the members
 * other claims of this process are taking, then shares only a read issued after it asked, so it sees every write
 * finished before it asked.
 */
export async function readPool(
  ctx: VdiContext,
  backend: DesktopBackend,
  target: { namespace: string; pool: string },
  how: PoolReadHow,
): Promise<PoolRead> {
  const { namespace, pool } = target;
  const share = shareOf(ctx, namespace, pool);
  const slot = how.cached ? 'cached' : 'fresh';
  const issue = () => {
    const notedBefore = share.notes;
    const read = Promise.all([
      backend.listMembers(namespace, pool, how),
      ctx.cluster.listLeases(namespace, `${leasePoolLabel}=${pool}`, how),
    ]).then(([members, leases]) => {
      // a fresh read shows every Lease written before it was issued; any read shows those it lists
      if (!how.cached) {
        for (const [member, note] of share.written) if (note <= notedBefore) share.written.delete(member);
      }
      for (const lease of leases)
        share.written.delete((lease.metadata.name ?? '').slice(leaseNamePrefix.length));
      return { members, leases };
    });
    share[slot] = read;
    const forget = () => {
      if (share[slot] === read) share[slot] = undefined;
    };
    read.then(forget, forget);
    return read;
  };
  if (how.cached) return await (share.cached ?? issue());
  await Promise.all(share.taking.values());
  const inFlight = share.fresh;
  if (inFlight === undefined) return await issue();
  // the read in flight may have been served before this claim asked: share the next one
  share.nextFresh ??= inFlight
    .then(
      () => {},
      () => {},
    )
    .then(() => {
      share.nextFresh = undefined;
      return issue();
    });
  return await share.nextFresh;
}

/**
 * The members other claims of this process are taking now, or found taken since the last read that shows it: a
 * claim planning from a shared, possibly lagging read passes them over.
 */
export function membersBeingTaken(ctx: VdiContext, target: { namespace: string; pool: string }): Set<string> {
  const share = shareOf(ctx, target.namespace, target.pool);
  return new Set([...share.taking.keys(), ...share.written.keys()]);
}

/** Tells the claims of this process that `member`'s Lease is written (this claim won it, or lost it to another). */
export function noteMemberWritten(
  ctx: VdiContext,
  target: { namespace: string; pool: string; member: string },
): void {
  const share = shareOf(ctx, target.namespace, target.pool);
  share.notes += 1;
  share.written.set(target.member, share.notes);
}

/** Tells the claims of this process that `member` is being taken until `taking` settles. */
export async function takeMember<T>(
  ctx: VdiContext,
  target: { namespace: string; pool: string; member: string },
  taking: () => Promise<T>,
): Promise<T> {
  const { taking: members } = shareOf(ctx, target.namespace, target.pool);
  const run = taking();
  const settled = run.then(
    () => {},
    () => {},
  );
  members.set(target.member, settled);
  try {
    return await run;
  } finally {
    if (members.get(target.member) === settled) members.delete(target.member);
  }
}

/**
 * Puts the identity's own claims, read fresh, over a cached list of the pool's claims: a cached list may not show a
 * claim this identity made a moment ago, and the one-desktop-per-identity rule must not miss it.
 */
export function withOwnClaims(
  cached: readonly LeaseObject[],
  own: readonly LeaseObject[],
  holderHash: string,
): LeaseObject[] {
  const ownNames = new Set(own.map((lease) => lease.metadata.name));
  const others = cached.filter(
    (lease) => lease.metadata.labels?.[leaseHolderLabel] !== holderHash && !ownNames.has(lease.metadata.name),
  );
  return [...others, ...own];
}

// a page of members that can be free: a claim needs one, and the claims of a process share each page they read
const freePageSize = 10;

/**
 * Reads a page of a pool's members whose presentation copy names nobody ({@link DesktopBackend.listMembersByHolder}),
 * from `from` (the first page when `undefined`), sharing it with the claims of this process that ask for the same
 * page while it is read. Members taken since are among those {@link membersBeingTaken} names, or their Lease write
 * fails: a page only proposes.
 */
export async function readFreePage(
  ctx: VdiContext,
  backend: DesktopBackend,
  target: { namespace: string; pool: string },
  from: string | undefined,
): Promise<MembersPage> {
  const { namespace, pool } = target;
  const { pages } = shareOf(ctx, namespace, pool);
  const key = from ?? '';
  let read = pages.get(key);
  if (read === undefined) {
    const listing = backend.listMembersByHolder;
    if (listing === undefined) return { members: [] };
    read = listing.call(backend, namespace, pool, {
      limit: freePageSize,
      ...(from === undefined ? {} : { continue: from }),
    });
    const issued = read;
    pages.set(key, issued);
    const forget = () => {
      if (pages.get(key) === issued) pages.delete(key);
    };
    issued.then(forget, forget);
  }
  return await read;
}

// the identities one read of named members asks for: a longer selector would near the limits of a request line
const maxNamedHolders = 50;

/**
 * Reads the members of a pool whose presentation copy names `identity` ({@link DesktopBackend.listMembersByHolder}),
 * up to `limit`; `undefined` when there are more. The apiserver matches such a selector against every member of the
 * namespace, so the claims of this process that ask meanwhile share one read, issued after each of them asked: it
 * names all their identities, and each takes its own members from it.
 */
export async function readNamedMembers(
  ctx: VdiContext,
  backend: DesktopBackend,
  target: { namespace: string; pool: string },
  identity: string,
  limit: number,
): Promise<MemberFacts[] | undefined> {
  const { namespace, pool } = target;
  const listing = backend.listMembersByHolder;
  if (listing === undefined) return undefined;
  const share = shareOf(ctx, namespace, pool);
  let next = share.namedNext;
  if (next === undefined || next.holders.length >= maxNamedHolders) {
    const holders: string[] = [];
    const after = share.namedLast ?? Promise.resolve();
    const issued: NamedRead = {
      holders,
      read: after
        .then(
          () => {},
          () => {},
        )
        .then(() => {
          // from here on, claims that ask join the next read
          if (share.namedNext === issued) share.namedNext = undefined;
          return listing.call(backend, namespace, pool, { holders, limit: limit * holders.length });
        }),
    };
    share.namedNext = issued;
    share.namedLast = issued.read;
    const forget = () => {
      if (share.namedLast === issued.read) share.namedLast = undefined;
    };
    issued.read.then(forget, forget);
    next = issued;
  }
  next.holders.push(identity);
  const page = await next.read;
  if (page.continue !== undefined) return undefined;
  const label = sanitizeLabelValue(identity);
  const named = page.members.filter((member) => member.presentation.label === label);
  return named.length > limit ? undefined : named;
}

/**
 * The pool's waiter Leases as the apiserver's watch cache shows them, sharing the read in flight: a pool with waiters
 * is planned whole, as their queue is.
 */
export async function readWaiterLeases(
  ctx: VdiContext,
  target: { namespace: string; pool: string },
): Promise<LeaseObject[]> {
  const share = shareOf(ctx, target.namespace, target.pool);
  if (share.waiters !== undefined) return await share.waiters;
  const read = ctx.cluster.listLeases(target.namespace, `${leasePoolLabel}=${target.pool},${waiterLabel}`, {
    cached: true,
  });
  share.waiters = read;
  const forget = () => {
    if (share.waiters === read) share.waiters = undefined;
  };
  read.then(forget, forget);
  return await read;
}

/**
 * A page of members that can be free, by its place in a walk from a first page: every page after the first is read
 * through a continue token, so it shows the pool as the walk's first page did.
 */
export interface FreePagePlace {
  /** The continue token the page is read from; `undefined` for a first page. */
  from: string | undefined;
  /** Which walk of this process the page belongs to: a later walk starts from a later first page. */
  walk: number;
  /** How many pages come before it in its walk. */
  position: number;
}

/** The first page of a new walk: the pool as the apiserver shows it now. */
export function startFreePageWalk(
  ctx: VdiContext,
  target: { namespace: string; pool: string },
): FreePagePlace {
  const share = shareOf(ctx, target.namespace, target.pool);
  share.walks += 1;
  return { from: undefined, walk: share.walks, position: 0 };
}

/**
 * Where a claim of this process starts reading pages of members that can be free: the page furthest along the latest
 * walk that gave one of its claims a member, so the claims of a busy process do not all walk again past the members
 * they took; a new walk when that page is a first page.
 */
export function freePageCursor(ctx: VdiContext, target: { namespace: string; pool: string }): FreePagePlace {
  const { cursor } = shareOf(ctx, target.namespace, target.pool);
  return cursor.from === undefined ? startFreePageWalk(ctx, target) : cursor;
}

/**
 * Moves the cursor to the page that gave a claim a member, only onward: a claim that read its page long ago and won
 * late would send the next claims back over the pages their process took since, from a snapshot older still.
 */
export function advanceFreePageCursor(
  ctx: VdiContext,
  target: { namespace: string; pool: string },
  place: FreePagePlace,
): void {
  const share = shareOf(ctx, target.namespace, target.pool);
  const { cursor } = share;
  if (place.walk > cursor.walk || (place.walk === cursor.walk && place.position > cursor.position))
    share.cursor = place;
}

/** Sends the next claims of this process to a new walk, past every walk started so far. */
export function resetFreePageCursor(ctx: VdiContext, target: { namespace: string; pool: string }): void {
  const share = shareOf(ctx, target.namespace, target.pool);
  share.cursor = { from: undefined, walk: share.walks, position: Number.POSITIVE_INFINITY };
}
