import { classifyMemberClaim, isClaimable, shownHolder } from '../claims/claim-liveness.js';
import type { DesktopKind, MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';

/** How many members of one pool are in each state, as the broker's metrics report them. @category metrics */
export interface PoolMemberCounts {
  kind: DesktopKind;
  namespace: string;
  pool: string;
  /** The members the pool should have: its spec's size for a container pool, the members not being deleted for a VM pool. */
  desired: number;
  /** Members a claim could take now: nobody holds them and they are not being deleted. */
  free: number;
  /** Members someone holds: a live Lease (not a take still under way), a v0.6.0 assignment or a running member that still names its user. */
  claimed: number;
  running: number;
  failed: number;
}

/** What {@link countPoolMembers} reads: one namespace's members, their Leases, and the specs' sizes. @category metrics */
export interface CountPoolMembersInput {
  namespace: string;
  members: readonly (Pick<MemberFacts, 'kind' | 'member' | 'pool' | 'deleting' | 'power' | 'presentation'> &
    Partial<Pick<MemberFacts, 'previousInstance'>>)[];
  leases: readonly LeaseObject[];
  /** The size each container pool's spec asks for, by pool name; a pool with a spec and no member yet is counted too. */
  ctSizes: ReadonlyMap<string, number>;
  now: Date;
}

/**
 * Counts each pool's desired, free, claimed, running and failed members, by the same claim rule as a claim.
 *
 * @example
 * ```ts
 * const counts = countPoolMembers({ namespace, members, leases, ctSizes: new Map(), now: clock.now() });
 * ```
 * @category metrics
 */
export function countPoolMembers(input: CountPoolMembersInput): PoolMemberCounts[] {
  const { namespace, members, leases, ctSizes, now } = input;
  const leaseByName = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const counts = new Map<string, PoolMemberCounts>();
  const countsOf = (kind: DesktopKind, pool: string): PoolMemberCounts => {
    const key = `${kind}/${pool}`;
    const found = counts.get(key);
    if (found) return found;
    const made = { kind, namespace, pool, desired: 0, free: 0, claimed: 0, running: 0, failed: 0 };
    counts.set(key, made);
    return made;
  };
  for (const [pool, size] of ctSizes) countsOf('ct', pool).desired = size;
  for (const member of members) {
    const pool = countsOf(member.kind, member.pool);
    const lease = leaseByName.get(leaseNameFor(member.member));
    if (member.kind !== 'ct' && !member.deleting) pool.desired += 1;
    if (isClaimable(classifyMemberClaim({ member, lease, now }))) pool.free += 1;
    // a take still under way is not a claim yet (nor free)
    if (shownHolder({ member, lease, now }) !== undefined) pool.claimed += 1;
    if (member.power === 'running') pool.running += 1;
    if (member.power === 'failed') pool.failed += 1;
  }
  return [...counts.values()];
}
