import { setTimeout as sleep } from 'node:timers/promises';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { type RemovalTarget, takeRemovalLease } from '../claims/removal-lease.js';
import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import { poolLabel } from '../keys.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { leaseNameFor } from '../lease-name.js';
import type { MemberOutcome } from '../pools/pool-member-factory.js';
import { dropPoolSnapshot } from '../vm/vm-pool-snapshot.js';
import { waitUntilVmGone } from '../vm/wait-until-vm-gone.js';

/** How long a member's removal waits for KubeVirt to let its VM go. */
export const memberDeleteTimeoutMs = 60_000;

/**
 * Deletes a member's clone object so it makes nothing afterwards. A finished one makes nothing more, so when the
 * identity may not delete it, it stays and the refusal is returned; any other failure is thrown.
 */
async function deleteFinishedClone(
  ctx: VdiContext,
  namespace: string,
  name: string,
): Promise<{ refusal: string; uid: string | undefined } | undefined> {
  try {
    await ctx.cluster.resource(cloneKind).in(namespace).delete(name, { preconditions: {} });
    return undefined;
  } catch (error) {
    if (!isVdiError(error, 'FORBIDDEN')) throw error;
    const clone = await ctx.cluster.getClone(namespace, name);
    const phase = clone?.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed') throw error;
    return { refusal: error.message, uid: clone?.metadata.uid };
  }
}

/** How long a removal lets the clones it found past their snapshot finish, so the VMs they make are removed too. */
const cloneFinishTimeoutMs = 30_000;
const cloneLookMs = 100;

/**
 * Waits, until `deadline` on `ctx.clock`, while the member's clone has its snapshot or its restore under way: KubeVirt's clone
 * controller makes the restore once the snapshot is ready (also in the moment the clone is being deleted), and the
 * restore outlives a deleted clone until a garbage collector removes it, writing the member's VM after the removal
 * looked. A clone that has not begun its snapshot makes nothing once deleted.
 *
 * @returns whether the clone was seen making nothing more; `false` when it could not be read or outlived `deadline`.
 */
async function letCloneFinish(
  ctx: VdiContext,
  namespace: string,
  name: string,
  deadline: number,
): Promise<boolean> {
  while (ctx.clock.now().getTime() < deadline) {
    const read = await ctx.cluster.getClone(namespace, name).then(
      (clone) => ({ status: clone?.status }),
      (error: unknown) => {
        // an identity that may not read clones cannot wait for one: it deletes it as it stands
        if (isVdiError(error, 'FORBIDDEN')) return undefined;
        throw error;
      },
    );
    if (read === undefined) return false;
    const { status } = read;
    const underWay = Boolean(status?.snapshotName || status?.restoreName);
    if (!underWay || status?.phase === 'Succeeded' || status?.phase === 'Failed') return true;
    await sleep(cloneLookMs);
  }
  return false;
}

// KubeVirt's clone controller deletes a finished clone as soon as it sees the clone's VM gone: a few looks suffice.
const finishedCloneGoneLooks = 50;
const finishedCloneLookMs = 100;

/**
 * Whether a finished clone this identity may not delete is gone once its VM is: KubeVirt's clone controller removes
 * a `Succeeded` clone whose target VM no longer exists. Another clone made under the name since counts as gone.
 */
async function isCloneGoneWithItsVm(
  ctx: VdiContext,
  namespace: string,
  name: string,
  uid: string | undefined,
): Promise<boolean> {
  for (let look = 0; look < finishedCloneGoneLooks; look += 1) {
    const clone = await ctx.cluster.getClone(namespace, name);
    if (!clone || clone.metadata.uid !== uid) return true;
    if (clone.status?.phase !== 'Succeeded') return false;
    await sleep(finishedCloneLookMs);
  }
  return false;
}

/**
 * Deletes a member's VM under a removal Lease, as a shrink does, so that no claim takes it meanwhile; a member a
 * claim already holds (its VM looked free before the call making it gave up) is left to it.
 *
 * @returns who holds the member when it was left, else `undefined`.
 */
async function deleteUnlessClaimed(
  ctx: VdiContext,
  target: RemovalTarget,
  vm: VirtualMachine,
): Promise<string | undefined> {
  const removal = await takeRemovalLease(ctx, target, undefined);
  if (removal === undefined) {
    const lease = await ctx.cluster.getLease(target.namespace, leaseNameFor(target.member));
    // the claim that held it may have ended since: the next cleanup (a pool delete) removes it
    return lease?.spec.holderIdentity ?? 'a claim that has ended since';
  }
  const uid = vm.metadata.uid ?? '';
  await ctx.cluster.deleteVm(target.namespace, target.member, { uid });
  // the removal Lease keeps claims off until KubeVirt has let the VM go, so a call made next never meets it
  await waitUntilVmGone(ctx, {
    namespace: target.namespace,
    member: target.member,
    uid,
    timeoutMs: memberDeleteTimeoutMs,
    timeoutCode: 'WAIT_TIMED_OUT',
    untilKubevirtLetsGo: true,
  });
  await deleteLeaseAsRead(ctx, removal);
  return undefined;
}

/**
 * Deletes what the given members left behind: the clone object first, once a clone past its snapshot has finished
 * (so it cannot produce a VM afterwards), then the VM, if it carries the pool's label. A finished clone it may not delete goes with its VM (KubeVirt
 * removes it); one still there is named in the outcome's `cloneLeft`. Emits `pool-progress` `removed` per member
 * and marks its outcome. Last, it deletes the snapshot of the golden VM those clones restored from, if they shared one.
 */
export async function removeMembers(
  ctx: VdiContext,
  input: { namespace: string; pool: string; outcomes: MemberOutcome[]; concurrency: number },
): Promise<void> {
  const { namespace, pool, outcomes, concurrency } = input;
  const poolId = formatPoolId({ kind: 'vm', namespace, pool });
  // a member another call is making is that call's: only what this call began is removed
  const started = outcomes.filter(
    (outcome) => outcome.status !== 'not-started' && outcome.status !== 'taken',
  );
  let done = 0;
  // one bound for the whole removal, so many stuck clones do not add up their waits
  const cloneFinishDeadline = ctx.clock.now().getTime() + cloneFinishTimeoutMs;
  const snapshots = new Set<string>();
  let restoresMayRun = false;
  await forEachBounded(started, concurrency, async (outcome) => {
    if (outcome.snapshot !== undefined) snapshots.add(outcome.snapshot);
    if (!(await letCloneFinish(ctx, namespace, outcome.clone, cloneFinishDeadline))) restoresMayRun = true;
    const left = await deleteFinishedClone(ctx, namespace, outcome.clone);
    // only a VM this pool's clone made carries its label; any other VM of that name is left alone
    const vm = await ctx.cluster.getVm(namespace, outcome.member);
    if (vm?.metadata.labels?.[poolLabel] === pool) {
      const heldBy = await deleteUnlessClaimed(ctx, { namespace, pool, member: outcome.member }, vm);
      if (heldBy !== undefined) outcome.heldBy = heldBy;
    }
    if (outcome.heldBy !== undefined) outcome.removed = false;
    else if (left === undefined || (await isCloneGoneWithItsVm(ctx, namespace, outcome.clone, left.uid)))
      outcome.removed = true;
    else outcome.cloneLeft = left.refusal;
    done += 1;
    ctx.events.emit('pool-progress', {
      poolId,
      member: outcome.member,
      step: 'removed',
      done,
      total: started.length,
    });
  });
  // only once no clone is left to read it: a restore of a clone not seen to finish may still read it
  for (const snapshot of snapshots) {
    if (!restoresMayRun) await dropPoolSnapshot(ctx, { namespace, poolId, snapshot });
    else
      ctx.events.emit('pool-snapshot', {
        poolId,
        step: 'left',
        snapshot,
        reason: `a clone not seen to finish may still restore from it; it makes nothing, and "corral-vdi pool delete" removes it`,
      });
  }
}
