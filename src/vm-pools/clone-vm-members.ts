import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import type { MakeMembersInput, MemberOutcome } from '../pools/pool-member-factory.js';
import { cloneNameFor } from '../vm/vm-clone-object.js';
import { cloneMember, withLabelMap } from '../vm/vm-clone-runner.js';
import { dropPoolSnapshot, takePoolSnapshot } from '../vm/vm-pool-snapshot.js';

function failedStatus(error: unknown): MemberOutcome['status'] {
  return isVdiError(error, 'CLONE_TIMEOUT')
    ? 'timed-out'
    : isVdiError(error, 'CANCELLED')
      ? 'cancelled'
      : 'failed';
}

function markFailed(outcome: MemberOutcome, error: unknown): void {
  outcome.status = failedStatus(error);
  outcome.error = (error as Error).message;
  if (isVdiError(error)) outcome.code = error.code;
}

/** Whether a member's clone exists and has not finished: it may still read the snapshot it restores from. */
async function isCloneUnderWay(ctx: VdiContext, namespace: string, outcome: MemberOutcome): Promise<boolean> {
  if (outcome.status === 'ready' || outcome.status === 'not-started' || outcome.status === 'taken')
    return false;
  try {
    const phase = (await ctx.cluster.getClone(namespace, outcome.clone))?.status?.phase;
    return phase !== undefined && phase !== 'Succeeded' && phase !== 'Failed';
  } catch {
    // a clone this identity cannot read may be restoring from the snapshot: the removal deletes it after the clone
    return true;
  }
}

/**
 * Clones `members` from `golden` in parallel, at most `concurrency` at once, emitting `pool-progress` for each.
 * Several members share one VirtualMachineSnapshot of `golden` (`pool-snapshot`): KubeVirt snapshots a VM one
 * snapshot at a time, so a clone per member from the VM would wait for the others' snapshots; from the snapshot the
 * restores run side by side. Without permission for snapshots, each clone snapshots the VM as before.
 * The first failure stops new clones from starting; the ones under way finish (each within its timeout), so
 * every member's outcome is known when this returns. The snapshot is deleted once every clone finished; one a
 * clone still under way may read is left to the removal of what was made ({@link removeMembers}), or a pool delete.
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
  let snapshot: string | undefined;
  if (members.length > 1) {
    ctx.events.emit('pool-snapshot', { poolId, step: 'taking' });
    try {
      const taken = await takePoolSnapshot(ctx, { ...input, poolId, golden });
      if ('skipped' in taken)
        ctx.events.emit('pool-snapshot', { poolId, step: 'skipped', reason: taken.skipped });
      else {
        snapshot = taken.snapshot;
        ctx.events.emit('pool-snapshot', { poolId, step: 'ready', snapshot });
      }
    } catch (error) {
      // no member can be made without the golden VM's snapshot: the first carries why, no clone was begun
      markFailed(outcomes[0] as MemberOutcome, error);
      return outcomes;
    }
  }
  const total = members.length;
  let done = 0;
  let failed = false;
  await forEachBounded(
    members,
    concurrency,
    async (member, index) => {
      const outcome = outcomes[index] as MemberOutcome;
      if (snapshot !== undefined) outcome.snapshot = snapshot;
      ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done, total });
      try {
        if ((await cloneMember(ctx, { ...input, golden, member, snapshot })) === 'made')
          outcome.status = 'ready';
        else {
          failed = true;
          outcome.status = 'taken';
          outcome.error = `another call is making or made ${member}; this call left it alone`;
        }
      } catch (error) {
        failed = true;
        markFailed(outcome, error);
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
  if (snapshot !== undefined) {
    const underWay = await Promise.all(outcomes.map((outcome) => isCloneUnderWay(ctx, namespace, outcome)));
    if (!underWay.includes(true)) await dropPoolSnapshot(ctx, { namespace, poolId, snapshot });
  }
  return outcomes;
}
