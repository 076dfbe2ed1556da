import { classifyMemberClaim, isClaimable } from '../claims/claim-liveness.js';
import type { MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';

/** What {@link planSpares} looks at. @category spares */
export interface SparesInput {
  /** How many free members the pool keeps running, already validated. */
  minReady: number;
  /** Every member of the pool, as its backend reports them, in any order. */
  members: readonly MemberFacts[];
  /** The pool's claim Leases as read; a Lease of no listed member is ignored. */
  leases: readonly LeaseObject[];
  /** The members that carry the spare mark (`corral.dev/vdi-spare`): the keeper started them. */
  marked: ReadonlySet<string>;
  /** How many more members the cluster's devices can run now; `undefined` when the members need none. */
  fits?: number | undefined;
  /** The time to judge Lease expiry at; pass `clock.now()`. */
  now: Date;
}

/**
 * What one keeper pass does to a pool, decided from one read:
 *
 * - `ready`: the free members running or starting now, which a claim gets warm.
 * - `start`: free stopped members to start and mark as spares, lowest first.
 * - `stop`: marked spares beyond `minReady` to stop, highest first, each after taking its Lease.
 * - `unmark`: members a claim holds that still carry the spare mark: they are no spares any more.
 * - `short`: how many spares are still missing after `start` (too few stopped members, or no device room).
 *
 * @category spares
 */
export interface SparesPlan {
  ready: string[];
  start: string[];
  stop: string[];
  unmark: string[];
  short: number;
}

/**
 * Whether the keeper may count or touch a member: nobody holds it and no user's expired claim lies on it (that
 * one is the session engine's). A Lease of the keeper's own kind (`corral-vdi/resize`) that expired counts as
 * none, so a keeper that died mid-stop leaves nothing stuck.
 */
function isKeepersToTouch(member: MemberFacts, lease: LeaseObject | undefined, now: Date): boolean {
  if (member.deleting) return false;
  if (!isClaimable(classifyMemberClaim({ member, lease, now }))) return false;
  const holder = lease?.spec.holderIdentity;
  return !holder || holder === removalHolder;
}

function isWarm(member: MemberFacts): boolean {
  return member.power === 'running' || member.power === 'starting';
}

/**
 * Plans one pass of the spare keeper for a pool with `minReady`: start free stopped members until `minReady` free
 * members run (never more than the pool has, nor more than `fits`), and stop marked spares beyond it. A free member
 * that runs without the mark (a user left it running) counts as ready but is never stopped here: today's rules
 * handle it. A member a claim holds is never started or stopped. Pure.
 *
 * @example
 * ```ts
 * const plan = planSpares({ minReady: 2, members, leases, marked: new Set(), now: clock.now() });
 * // { ready: [], start: ['devpool-1', 'devpool-2'], stop: [], unmark: [], short: 0 }
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `minReady` or `fits` is not a whole number of at least 0.
 * @category spares
 */
export function planSpares(input: SparesInput): SparesPlan {
  const { minReady, marked, fits, now } = input;
  for (const [name, value] of [
    ['minReady', minReady],
    ['fits', fits ?? 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new VdiError('INVALID_INPUT', `${name} must be a whole number of at least 0, not ${value}.`);
    }
  }
  const leaseByName = new Map(input.leases.map((lease) => [lease.metadata.name, lease]));
  const members = [...input.members].sort((left, right) => compareNatural(left.member, right.member));
  const open: MemberFacts[] = [];
  const unmark: string[] = [];
  for (const member of members) {
    const lease = leaseByName.get(leaseNameFor(member.member));
    if (isKeepersToTouch(member, lease, now)) open.push(member);
    // a shrink or a stop holds its member only for a moment; a user's claim makes it no spare
    else if (marked.has(member.member) && !member.deleting && lease?.spec.holderIdentity !== removalHolder)
      unmark.push(member.member);
  }
  const ready = open.filter(isWarm).map((member) => member.member);
  const missing = Math.max(0, minReady - ready.length);
  const startable = open.filter((member) => member.power === 'stopped' && !member.previousInstance);
  const start = startable.slice(0, Math.min(missing, fits ?? missing)).map((member) => member.member);
  const surplus = Math.max(0, ready.length - minReady);
  const stop = open
    .filter((member) => isWarm(member) && marked.has(member.member))
    .reverse()
    .slice(0, surplus)
    .map((member) => member.member);
  return { ready, start, stop, unmark, short: missing - start.length };
}
