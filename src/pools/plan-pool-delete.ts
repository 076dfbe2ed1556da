import { isFreeMember, type PoolMemberView } from './pool-view.js';

/**
 * What {@link planPoolDelete} decides: delete every member (`forced` when some are claimed and `force` allowed
 * it), or refuse with `POOL_IN_USE`, naming the claimed members. Nothing changes on a refusal.
 *
 * @category pools
 */
export type PoolDeletePlan =
  | { kind: 'delete'; members: string[]; forced: boolean }
  | { kind: 'reject'; code: 'POOL_IN_USE'; message: string; claimed: string[] };

function holderText(member: PoolMemberView): string {
  const { state } = member;
  if (state.kind === 'claimed') return `${member.name} (${state.holder})`;
  if (state.kind === 'legacy-assigned') return `${member.name} (${state.user}, v0.6.0)`;
  return member.name;
}

/**
 * Plans a pool delete: while members are claimed (or assigned by v0.6.0) it refuses, unless `force`.
 *
 * @example
 * ```ts
 * const plan = planPoolDelete({ pool: 'devpool', members: pool.members, force: false });
 * ```
 * @category pools
 */
export function planPoolDelete(input: {
  pool: string;
  members: readonly PoolMemberView[];
  force: boolean;
}): PoolDeletePlan {
  const { pool, members, force } = input;
  const busy = members.filter(
    (member) =>
      (member.state.kind === 'claimed' || member.state.kind === 'legacy-assigned') && !isFreeMember(member),
  );
  const names = members.map((member) => member.name);
  if (busy.length === 0) return { kind: 'delete', members: names, forced: false };
  if (force) return { kind: 'delete', members: names, forced: true };
  return {
    kind: 'reject',
    code: 'POOL_IN_USE',
    message: `Pool "${pool}" has claimed members: ${busy.map(holderText).join(', ')}. Release them first, or delete with force (an administrator's action, recorded in the audit log).`,
    claimed: busy.map((member) => member.name),
  };
}
