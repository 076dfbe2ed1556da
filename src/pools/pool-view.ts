import { classifyClaim, isTakeUnderWay, readClaimMarks } from '../claims/claim-liveness.js';
import { formatTime, normalizeTime } from '../format-time.js';
import { formatDesktopId, formatPoolId } from '../ids.js';
import { ephemeralLabel, poolLabel, removalHolder, sourceAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import { type PoolSettings, type ReclaimAction, reclaimActionOf } from '../pool-settings.js';

/**
 * Who has a member, as read from its Lease and labels:
 *
 * - `free`: nobody (no Lease, or one that expired or names no holder).
 * - `claimed`: `holder` holds it, since `since`, until `expiresAt`. `leaseMissing` marks a member whose VM
 *   still shows a running assignment but whose Lease is gone; it stays taken until its user claims it back or an
 *   administrator releases it.
 * - `legacy-assigned`: a v0.6.0 assignment (label only, no Lease) to `user`.
 * - `taking`: a claim of `holder` wrote the Lease while the member still goes down, and has not handed it out
 *   (see `isTakeUnderWay`): not a claim yet, and not free.
 * - `deleting`: the VM is being deleted.
 *
 * @category pools
 */
export type MemberState =
  | { kind: 'free' }
  | { kind: 'claimed'; holder: string; since?: string; expiresAt?: string; leaseMissing?: true }
  | { kind: 'legacy-assigned'; user: string; since?: string }
  | { kind: 'taking'; holder: string }
  | { kind: 'deleting' };

/** One member of a pool as {@link describePools} reads it. @category pools */
export interface PoolMemberView {
  name: string;
  /** `vm/<namespace>/<member>`. */
  desktopId: string;
  state: MemberState;
  /** KubeVirt's `status.printableStatus` (`Stopped`, `Running`, `Starting`, …), or `Unknown` before it reports. */
  power: string;
  ephemeral: boolean;
  /** The golden VM it was cloned from, when the member records it. */
  source?: string;
}

/** A pool, read back from its members' labels. @category pools */
export interface PoolView {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  name: string;
  namespace: string;
  /** Members in natural order: `-2` before `-10`. */
  members: PoolMemberView[];
  counts: { members: number; free: number; claimed: number };
  /** What the reclaim policy does with its desktops: the pool's own action, or its reset. */
  reclaimAction: ReclaimAction;
  /** The pool's own settings, as stored; empty when it has none. */
  settings: PoolSettings;
}

function stateOf(vm: VirtualMachine, lease: LeaseObject | undefined, now: Date): MemberState {
  const claim = classifyClaim({ vm, lease, now });
  switch (claim.kind) {
    case 'free':
    case 'stale':
    case 'expired':
      return { kind: 'free' };
    case 'held': {
      if (lease && isTakeUnderWay(readClaimMarks(vm), lease)) return { kind: 'taking', holder: claim.holder };
      const since = normalizeTime(lease?.spec.acquireTime ?? lease?.spec.renewTime);
      return {
        kind: 'claimed',
        holder: claim.holder,
        ...(since ? { since } : {}),
        expiresAt: formatTime(claim.expiresAt),
      };
    }
    case 'orphan': {
      const since = normalizeTime(claim.claimedAt);
      return { kind: 'claimed', holder: claim.holder, ...(since ? { since } : {}), leaseMissing: true };
    }
    case 'legacy': {
      const since = normalizeTime(claim.claimedAt);
      return { kind: 'legacy-assigned', user: claim.holder, ...(since ? { since } : {}) };
    }
    case 'deleting':
      return { kind: 'deleting' };
  }
}

/**
 * Whether a member is free to be removed: no live claim, no v0.6.0 assignment, not being deleted. A member a
 * removal holds (`corral-vdi/resize`, perhaps left by one that died) counts as free here; claims still wait for
 * that Lease to expire.
 *
 * @category pools
 */
export function isFreeMember(member: PoolMemberView): boolean {
  const { state } = member;
  return state.kind === 'free' || (state.kind === 'claimed' && state.holder === removalHolder);
}

/**
 * Groups the pool members of one namespace by their `corral.dev/vdi-pool` label and tells each member's state
 * from its Lease `corral-vdi-<member>` (matched by name, so a Lease without labels counts too) and its labels.
 * VMs without the label are ignored.
 *
 * @returns the pools sorted by name, members in natural order.
 * @example
 * ```ts
 * const [pool] = describePools({ namespace: 'corral-vms', vms, leases, now: clock.now() });
 * console.log(pool?.members.map((member) => `${member.name} ${member.state.kind} ${member.power}`));
 * ```
 * @category pools
 */
export function describePools(input: {
  namespace: string;
  vms: readonly VirtualMachine[];
  leases: readonly LeaseObject[];
  now: Date;
  /** Each pool's own settings, by pool name. */
  settings?: ReadonlyMap<string, PoolSettings>;
}): PoolView[] {
  const { namespace, vms, leases, now } = input;
  const leaseByName = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const byPool = new Map<string, PoolMemberView[]>();
  for (const vm of vms) {
    const pool = vm.metadata.labels?.[poolLabel];
    const name = vm.metadata.name;
    if (!pool || !name) continue;
    const source = vm.metadata.annotations?.[sourceAnnotation];
    const members = byPool.get(pool) ?? [];
    members.push({
      name,
      desktopId: formatDesktopId({ kind: 'vm', namespace, member: name }),
      state: stateOf(vm, leaseByName.get(leaseNameFor(name)), now),
      power: vm.status?.printableStatus ?? 'Unknown',
      ephemeral: vm.metadata.labels?.[ephemeralLabel] === 'true',
      ...(source ? { source } : {}),
    });
    byPool.set(pool, members);
  }
  return [...byPool.entries()]
    .sort(([left], [right]) => compareNatural(left, right))
    .map(([name, members]) => {
      members.sort((left, right) => compareNatural(left.name, right.name));
      const free = members.filter(isFreeMember).length;
      const claimed = members.filter(
        (member) =>
          (member.state.kind === 'claimed' || member.state.kind === 'legacy-assigned') &&
          !isFreeMember(member),
      ).length;
      const settings = input.settings?.get(name) ?? {};
      return {
        id: formatPoolId({ kind: 'vm', namespace, pool: name }),
        name,
        namespace,
        members,
        counts: { members: members.length, free, claimed },
        reclaimAction: reclaimActionOf(settings, members[0]?.ephemeral ?? false),
        settings,
      };
    });
}
