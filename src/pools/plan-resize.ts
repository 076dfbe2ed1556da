import { type ClaimFacts, classifyClaim, classifyLease, isClaimable } from '../claims/claim-liveness.js';
import { removalHolder } from '../keys.js';
import { nextMemberNames } from '../member-names.js';
import { isFreeMember, type PoolView } from './pool-view.js';

/**
 * What {@link planResize} decides:
 *
 * - `unchanged`: the pool already has `size` members.
 * - `grow`: make the members named in `add`, the lowest free indices, from the golden VM `source`, ephemeral
 *   when the pool's members are.
 * - `shrink`: remove the free members in `remove`, highest index first.
 * - `reject`: nothing changes; `code` and `message` say why. `POOL_IN_USE`: too few members are free to shrink
 *   that far; `smallest` is the size the pool can shrink to now, and `busy` names the members in the way.
 *   `INVALID_INPUT`: the pool must grow, but its members do not name one golden VM (`sources`) and the caller
 *   named none.
 *
 * @category pools
 */
export type ResizePlan =
  | { kind: 'unchanged'; size: number }
  | { kind: 'grow'; from: number; size: number; add: string[]; source: string; ephemeral: boolean }
  | { kind: 'shrink'; from: number; size: number; remove: string[] }
  | {
      kind: 'reject';
      code: 'POOL_IN_USE';
      from: number;
      size: number;
      smallest: number;
      busy: string[];
      message: string;
    }
  | { kind: 'reject'; code: 'INVALID_INPUT'; from: number; size: number; sources: string[]; message: string };

/** What {@link planResize} looks at. @category pools */
export interface ResizeInput {
  /** The pool as read. */
  pool: PoolView;
  /** The number of members wanted, already validated. */
  size: number;
  /** Every name a new member may not take: the namespace's objects and the members its live Leases claim. */
  taken: ReadonlySet<string>;
  /**
   * Members of the pool a live claim holds while their object is gone (a release recreating them): they count as
   * members, and their names are taken.
   */
  resetting?: readonly string[];
  /** The golden VM the caller names for new members; without it, the one the members record. */
  source?: string | undefined;
}

/**
 * Plans a resize of `pool` to `size` members: the whole decision, before anything changes. Growth takes the
 * lowest indices whose names no object of the namespace and no live Lease holds, and the golden VM the caller
 * names or the members all record; shrinking removes only free members (see {@link isFreeMember}), the highest
 * index first, and is refused as a whole when there are too few, so a resize never takes a claimed desktop away.
 *
 * @example
 * ```ts
 * planResize({ pool, size: 2, taken: new Set(vmNames) });
 * // { kind: 'shrink', from: 3, size: 2, remove: ['devpool-3'] }
 * ```
 * @category pools
 */
export function planResize(input: ResizeInput): ResizePlan {
  const { pool, size, taken, source } = input;
  const resetting = input.resetting ?? [];
  const from = pool.members.length + resetting.length;
  if (size === from) return { kind: 'unchanged', size };
  if (size > from) {
    const sources = [
      ...new Set(pool.members.map((member) => member.source).filter((named) => named !== undefined)),
    ];
    const recorded = pool.members.every((member) => member.source !== undefined) ? sources : [];
    const golden = source ?? (recorded.length === 1 ? recorded[0] : undefined);
    if (golden === undefined) {
      return {
        kind: 'reject',
        code: 'INVALID_INPUT',
        from,
        size,
        sources,
        message: `The members of pool "${pool.name}" do not name one golden VM (${sources.length === 0 ? 'none recorded' : sources.join(', ')}); pass from with the golden VM to clone new members from.`,
      };
    }
    const names = new Set([...taken, ...resetting, ...pool.members.map((member) => member.name)]);
    return {
      kind: 'grow',
      from,
      size,
      add: nextMemberNames(pool.name, names, size - from),
      source: golden,
      ephemeral: pool.members.some((member) => member.ephemeral),
    };
  }
  const free = pool.members.filter(isFreeMember).reverse();
  const count = from - size;
  if (free.length >= count)
    return { kind: 'shrink', from, size, remove: free.slice(0, count).map((member) => member.name) };
  const busy = [
    ...pool.members.filter((member) => !isFreeMember(member)).map((member) => member.name),
    ...resetting,
  ];
  const smallest = from - free.length;
  return {
    kind: 'reject',
    code: 'POOL_IN_USE',
    from,
    size,
    smallest,
    busy,
    message:
      `Pool "${pool.name}" has ${from} members and ${busy.length} of them are not free (${busy.join(', ')}), so it ` +
      `can shrink to ${smallest} at the least, not ${size}. Nothing was removed. Release members first, or ask for ` +
      `a size of ${smallest} or more.`,
  };
}

/**
 * The last check before a shrink or a pool delete takes one member's Lease to remove it: only a member nobody
 * holds, or one a removal holds (`corral-vdi/resize`, perhaps left by one that died), is removed. A member already
 * being deleted is judged by its Lease alone. The Lease write that follows is conditional, so a claim landing
 * after this check makes it lose and the member stays.
 *
 * @example
 * ```ts
 * const step = planMemberRemoval({ vm, lease, now: clock.now() });
 * if (step.kind === 'skip') skipped.push(member);
 * ```
 * @throws `VdiError` `INVALID_INPUT` as {@link classifyClaim}.
 * @category pools
 */
export function planMemberRemoval(facts: ClaimFacts): { kind: 'remove' } | { kind: 'skip' } {
  const { lease, now } = facts;
  const found = classifyClaim(facts);
  // a member already being deleted may be a reset making it again for the live claim on its Lease
  const claim =
    found.kind !== 'deleting'
      ? found
      : lease === undefined
        ? { kind: 'free' as const }
        : classifyLease(lease, now);
  const removable = isClaimable(claim) || (claim.kind === 'held' && claim.holder === removalHolder);
  return removable ? { kind: 'remove' } : { kind: 'skip' };
}
