import type { MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import { memberFromLeaseName } from '../lease-name.js';
import { type ClaimLiveness, classifyMemberClaim, isClaimable } from './claim-liveness.js';
import { isGoingDown } from './plan-claim.js';

/** Where a {@link PoolClaimIndex} looks a member up: the process's caches, without a request. */
export interface PoolIndexSource {
  /** The names of the pool's members now. */
  names(): Iterable<string>;
  /** A member's facts now; `undefined` when it is not (or no longer) a member of the pool. */
  member(name: string): MemberFacts | undefined;
  /** The member's claim Lease now; `undefined` when it has none. */
  lease(member: string): LeaseObject | undefined;
}

/** The part of a pool a claim plans from: the members that can matter to it, and their Leases. */
export interface PoolExcerpt {
  members: MemberFacts[];
  leases: LeaseObject[];
}

/** What the index keeps of one member: its facts, its Lease and how they stood at the last look. */
interface IndexedMember {
  facts: MemberFacts;
  lease: LeaseObject | undefined;
  claim: ClaimLiveness;
}

/** A set that adds, removes and picks a random element in constant time. */
class PickableSet {
  private readonly items: string[] = [];
  private readonly places = new Map<string, number>();

  get size(): number {
    return this.items.length;
  }

  add(item: string): void {
    if (this.places.has(item)) return;
    this.places.set(item, this.items.length);
    this.items.push(item);
  }

  delete(item: string): void {
    const place = this.places.get(item);
    if (place === undefined) return;
    const last = this.items.pop() as string;
    this.places.delete(item);
    if (last === item) return;
    this.items[place] = last;
    this.places.set(last, place);
  }

  at(index: number): string {
    return this.items[index] as string;
  }
}

// how many open members a claim's excerpt offers it
const picksPerPlan = 8;

/**
 * One pool as its claims need it, kept up to date member by member from the caches' changes, so that a claim of
 * a large pool plans over the few members that can matter to it instead of over all of them: the identity's own
 * claims, the members that name it without a Lease, and a random few of the open members (free, or with a claim
 * that binds nobody, and nothing of an earlier holder still running), running ones first. {@link planClaim} then
 * decides over that excerpt by the same rules as over the whole pool. A member whose claim expires changes
 * without a cache event, so the index looks at every held member again once the earliest of them expires.
 */
export class PoolClaimIndex {
  private readonly entries = new Map<string, IndexedMember>();
  private readonly dirty = new Set<string>();
  private readonly openRunning = new PickableSet();
  private readonly openOther = new PickableSet();
  // members that name a user without a Lease, by that user: only that user may adopt them
  private readonly adoptable = new Map<string, Set<string>>();
  // the earliest instant a held member's claim may have expired; the index looks at them all again then
  private recheckAtMs = Number.POSITIVE_INFINITY;
  private lastNowMs = Number.NEGATIVE_INFINITY;
  private readonly source: PoolIndexSource;

  constructor(source: PoolIndexSource) {
    this.source = source;
    for (const name of source.names()) this.dirty.add(name);
  }

  /** Tells the index that a member, or its Lease, changed: it looks at it again before the next excerpt. */
  changed(member: string): void {
    this.dirty.add(member);
  }

  /**
   * The excerpt a claim of `identity` plans from at `now`, given its own claims as read fresh (`own`) and the
   * members it must pass over; `undefined` when no open member is left to pick, so the claim plans over the whole
   * pool (which also tells a refusal's reasons).
   */
  excerpt(ask: {
    identity: string;
    own: readonly LeaseObject[];
    exclude: ReadonlySet<string>;
    now: Date;
    random: () => number;
  }): PoolExcerpt | undefined {
    this.lookAgain(ask.now);
    const names = new Set<string>();
    for (const lease of ask.own) {
      const member = memberFromLeaseName(lease.metadata.name ?? '');
      if (member !== undefined && this.entries.has(member)) names.add(member);
    }
    for (const member of this.adoptable.get(ask.identity) ?? []) names.add(member);
    const picked = this.pick(this.openRunning, ask) ?? this.pick(this.openOther, ask);
    if (picked === undefined) return undefined;
    for (const member of picked) names.add(member);
    const members: MemberFacts[] = [];
    const leases: LeaseObject[] = [];
    for (const name of names) {
      const entry = this.entries.get(name) as IndexedMember;
      members.push(entry.facts);
      if (entry.lease) leases.push(entry.lease);
    }
    return { members, leases };
  }

  private pick(
    set: PickableSet,
    ask: { exclude: ReadonlySet<string>; random: () => number },
  ): string[] | undefined {
    if (set.size === 0) return undefined;
    const picked: string[] = [];
    // from a random place on: the set's order is its adds' and removes', and the excluded (claims in flight) are few
    const start = Math.floor(ask.random() * set.size);
    for (let step = 0; step < set.size && picked.length < picksPerPlan; step += 1) {
      const member = set.at((start + step) % set.size);
      if (!ask.exclude.has(member)) picked.push(member);
    }
    return picked.length > 0 ? picked : undefined;
  }

  private lookAgain(now: Date): void {
    const nowMs = now.getTime();
    // a claim may have expired since, and a clock that went back may make an expired one bind again
    const back = nowMs < this.lastNowMs;
    if (back || nowMs >= this.recheckAtMs) {
      for (const [name, entry] of this.entries) if (back || entry.claim.kind === 'held') this.dirty.add(name);
      this.recheckAtMs = Number.POSITIVE_INFINITY;
    }
    this.lastNowMs = nowMs;
    for (const name of this.dirty) this.look(name, now);
    this.dirty.clear();
  }

  private look(name: string, now: Date): void {
    this.forget(name);
    const facts = this.source.member(name);
    if (facts === undefined) return;
    const lease = this.source.lease(name);
    const claim = classifyMemberClaim({ member: facts, lease, now });
    this.entries.set(name, { facts, lease, claim });
    if (claim.kind === 'held') this.recheckAtMs = Math.min(this.recheckAtMs, claim.expiresAt.getTime() + 1);
    if (claim.kind === 'legacy' || claim.kind === 'orphan') {
      const named = this.adoptable.get(claim.holder) ?? new Set<string>();
      named.add(name);
      this.adoptable.set(claim.holder, named);
    }
    if (isClaimable(claim) && !isGoingDown(facts)) {
      (facts.power === 'running' ? this.openRunning : this.openOther).add(name);
    }
  }

  private forget(name: string): void {
    const entry = this.entries.get(name);
    if (entry === undefined) return;
    this.entries.delete(name);
    this.openRunning.delete(name);
    this.openOther.delete(name);
    const { claim } = entry;
    if (claim.kind !== 'legacy' && claim.kind !== 'orphan') return;
    const named = this.adoptable.get(claim.holder);
    named?.delete(name);
    if (named?.size === 0) this.adoptable.delete(claim.holder);
  }
}
