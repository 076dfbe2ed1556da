import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import type { MakeMembersInput, MemberOutcome } from '../pools/pool-member-factory.js';
import { cloneNameFor } from '../vm/vm-clone-object.js';
import { cloneMember, withLabelMap } from '../vm/vm-clone-runner.js';

/**
 * Clones `members` from `golden` in parallel, at most `concurrency` at once, emitting `pool-progress` for each.
 * The first failure stops new clones from starting; the ones under way finish (each within its timeout), so
 * every member's outcome is known when this returns.
 */
export async function cloneMembers(
  ctx: VdiContext,
  input: MakeMembersInput & { golden: VirtualMachine },
): Promise<MemberOutcome[]> {
  const { namespace, pool, members, concurrency, signal } = input;
  // once for all members, not once per clone
  const golden = await withLabelMap(ctx, namespace, input.golden);
  const poolId = formatPoolId({ kind: 'vm', namespace, pool });
  const outcomes: MemberOutcome[] = members.map((member) => ({
    member,
    clone: cloneNameFor(member),
    status: 'not-started',
  }));
  const total = members.length;
  let done = 0;
  let failed = false;
  await forEachBounded(
    members,
    concurrency,
    async (member, index) => {
      const outcome = outcomes[index] as MemberOutcome;
      ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done, total });
      try {
        if ((await cloneMember(ctx, { ...input, golden, member })) === 'made') outcome.status = 'ready';
        else {
          failed = true;
          outcome.status = 'taken';
          outcome.error = `another call is making or made ${member}; this call left it alone`;
        }
      } catch (error) {
        failed = true;
        outcome.status = isVdiError(error, 'CLONE_TIMEOUT')
          ? 'timed-out'
          : isVdiError(error, 'CANCELLED')
            ? 'cancelled'
            : 'failed';
        outcome.error = (error as Error).message;
        if (isVdiError(error)) outcome.code = error.code;
      }
      done += 1;
      ctx.events.emit('pool-progress', {
        poolId,
        member,
        step: outcome.status === 'ready' ? 'ready' : 'failed',
        done,
        total,
      });
    },
    () => failed || signal?.aborted === true,
  );
  return outcomes;
}
