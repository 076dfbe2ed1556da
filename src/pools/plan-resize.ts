import { nextMemberNames } from './member-names.js';
import { isFreeMember, type PoolView } from './pool-view.js';

/**
 * What {@link planResize} decides:
 *
 * - `unchanged`: the pool already has `size` members.
 * - `grow`: clone the members named in `add`, the lowest free indices.
 * - `shrink`: remove the free members in `remove`, highest index first.
 * - `reject`: too few members are free to shrink that far; nothing changes. `smallest` is the size the pool can
 *   shrink to now, and `busy` names the members in the way.
 *
 * @category pools
 */
export type ResizePlan =
  | { kind: 'unchanged'; size: number }
  | { kind: 'grow'; from: number; size: number; add: string[] }
  | { kind: 'shrink'; from: number; size: number; remove: string[] }
  | { kind: 'reject'; from: number; size: number; smallest: number; busy: string[]; message: string };

/**
 * Plans a resize of `pool` to `size` members. Growth takes the lowest indices whose names no VM of the
 * namespace holds (`taken`); shrinking removes only free members, the highest index first, and is refused as a
 * whole when there are too few, so a resize never takes a claimed desktop away.
 *
 * @example
 * ```ts
 * planResize({ pool, size: 2, taken: new Set(vmNames) });
 * // { kind: 'shrink', from: 3, size: 2, remove: ['devpool-3'] }
 * ```
 * @category pools
 */
export function planResize(input: { pool: PoolView; size: number; taken: ReadonlySet<string> }): ResizePlan {
  const { pool, size, taken } = input;
  const from = pool.members.length;
  if (size === from) return { kind: 'unchanged', size };
  if (size > from) {
    const names = new Set([...taken, ...pool.members.map((member) => member.name)]);
    return { kind: 'grow', from, size, add: nextMemberNames(pool.name, names, size - from) };
  }
  const free = pool.members.filter(isFreeMember).reverse();
  const count = from - size;
  if (free.length >= count)
    return { kind: 'shrink', from, size, remove: free.slice(0, count).map((member) => member.name) };
  const busy = pool.members.filter((member) => !isFreeMember(member)).map((member) => member.name);
  const smallest = from - free.length;
  return {
    kind: 'reject',
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
