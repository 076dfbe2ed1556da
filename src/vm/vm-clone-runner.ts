import { setTimeout as sleep } from 'node:timers/promises';
import { leaseNameFor } from '../claims/lease-name.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { forEachBounded } from '../for-each-bounded.js';
import { formatPoolId } from '../ids.js';
import { goldenLabel, poolLabel } from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineClone } from '../kubevirt-types.js';
import type { MakeMembersInput, MemberOutcome } from '../pools/pool-member-factory.js';
import { type RemovalTarget, takeRemovalLease } from '../pools/removal-lease.js';
import { formatDuration } from '../sessions/parse-duration.js';
import { buildMemberClone, buildStagedClone, cloneNameFor } from './vm-clone-object.js';

const firstPollMs = 50;
const longestPollMs = 250;

function cancelledError(what: string, cause: unknown): VdiError {
  return new VdiError('CANCELLED', `${what} was cancelled by the caller.`, { cause });
}

function failureReason(clone: VirtualMachineClone): string {
  const conditions = clone.status?.conditions ?? [];
  const telling = conditions.find((condition) => condition.message || condition.reason);
  if (!telling) return 'KubeVirt gave no reason';
  return [telling.reason, telling.message].filter(Boolean).join(': ');
}

/**
 * Waits until a clone reaches `Succeeded`. The target VM appears before its disks are restored, so only the
 * phase tells that a member is ready. Polls with a short real interval; the deadline comes from `ctx.clock`.
 *
 * @throws {@link VdiError} `CLONE_FAILED` when the clone fails (with KubeVirt's reason) or disappears;
 *   `CLONE_TIMEOUT` after `timeoutMs`, naming the clone object and the usual causes.
 */
export async function waitForClone(
  ctx: VdiContext,
  input: {
    namespace: string;
    name: string;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    /** When the clone was asked for (`ctx.clock` ms): the timeout counts from then. @defaultValue now */
    since?: number | undefined;
  },
): Promise<VirtualMachineClone> {
  const { namespace, name, timeoutMs, signal } = input;
  const started = input.since ?? ctx.clock.now().getTime();
  let interval = firstPollMs;
  for (;;) {
    const clone = await ctx.cluster.getClone(namespace, name);
    const phase = clone?.status?.phase;
    if (clone === undefined) {
      throw new VdiError(
        'CLONE_FAILED',
        `VirtualMachineClone ${namespace}/${name} disappeared before it finished.`,
        {
          details: { clone: name, namespace },
        },
      );
    }
    if (phase === 'Succeeded') return clone;
    if (phase === 'Failed') {
      throw new VdiError(
        'CLONE_FAILED',
        `VirtualMachineClone ${namespace}/${name} failed: ${failureReason(clone)}.`,
        {
          details: { clone: name, namespace, reason: failureReason(clone) },
        },
      );
    }
    if (ctx.clock.now().getTime() - started >= timeoutMs) {
      throw new VdiError(
        'CLONE_TIMEOUT',
        `timed out after ${formatDuration(timeoutMs)} waiting for the clone to produce VM ${namespace}/` +
          `${clone.spec.target?.name ?? name}: VirtualMachineClone ${namespace}/${name} is in phase ` +
          `${phase || 'not set'}. See its phase with "kubectl get virtualmachineclone -n ` +
          `${namespace} ${name}". A stuck clone almost always has one of two causes: the StorageClass or ` +
          "VolumeSnapshotClass the golden VM's disks need is missing or cannot snapshot, or one of its PVCs cannot be " +
          'snapshotted.',
        { retryable: true, details: { clone: name, namespace, phase: phase ?? '' } },
      );
    }
    try {
      await sleep(interval, undefined, signal ? { signal } : {});
    } catch (error) {
      throw cancelledError(`Waiting for VirtualMachineClone ${namespace}/${name}`, error);
    }
    interval = Math.min(interval * 2, longestPollMs);
  }
}

/**
 * Creates a member's clone object, replacing a finished leftover of the same name. The name is another call's
 * (`taken`) when its VM exists or its clone is still running: this call then makes nothing and leaves them alone.
 */
async function createMemberClone(
  ctx: VdiContext,
  clone: VirtualMachineClone,
  member: string,
): Promise<'created' | 'taken'> {
  const namespace = clone.metadata.namespace ?? '';
  const name = clone.metadata.name ?? '';
  if (await ctx.cluster.getVm(namespace, member)) return 'taken';
  try {
    await ctx.cluster.createClone(namespace, clone);
    return 'created';
  } catch (error) {
    if (!isConflictReason(error, 'AlreadyExists')) throw error;
    const existing = await ctx.cluster.getClone(namespace, name);
    const phase = existing?.status?.phase;
    if (existing && phase !== 'Succeeded' && phase !== 'Failed') return 'taken';
    // a finished clone whose VM exists made a member for another call
    if (await ctx.cluster.getVm(namespace, member)) return 'taken';
    await ctx.cluster.resource(cloneKind).in(namespace).delete(name, { preconditions: {} });
    await ctx.cluster.createClone(namespace, clone);
    return 'created';
  }
}

/**
 * Waits for the clone that makes `member` and deletes its finished object. A clone that vanished while the
 * member's VM stands was finished, and its object deleted, by a concurrent reset of the same member.
 *
 * @throws {@link VdiError} as {@link waitForClone}.
 */
export async function finishMemberClone(
  ctx: VdiContext,
  input: {
    namespace: string;
    member: string;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    since?: number | undefined;
  },
): Promise<void> {
  const { namespace, member, timeoutMs, signal, since } = input;
  const name = cloneNameFor(member);
  try {
    await waitForClone(ctx, { namespace, name, timeoutMs, signal, since });
  } catch (error) {
    if (!isVdiError(error, 'CLONE_FAILED') || (await ctx.cluster.getClone(namespace, name))) throw error;
    const vm = await ctx.cluster.getVm(namespace, member);
    if (!vm || vm.metadata.deletionTimestamp) throw error;
    return;
  }
  await ctx.cluster.resource(cloneKind).in(namespace).delete(name, { preconditions: {} });
}

/**
 * The golden VM with a label map a clone can add the pool label into: as read when it has a label, else after
 * labelling it {@link goldenLabel} (a metadata write; the VM's spec and run state stay as they are).
 */
async function withLabelMap(
  ctx: VdiContext,
  namespace: string,
  golden: VirtualMachine,
): Promise<VirtualMachine> {
  if (Object.keys(golden.metadata.labels ?? {}).length > 0) return golden;
  return await ctx.cluster.patchVm(namespace, golden.metadata.name ?? '', {
    metadata: { labels: { [goldenLabel]: 'true' } },
  });
}

/**
 * Makes one member: labels a golden VM that has no label ({@link withLabelMap}), creates its clone, waits for `Succeeded`, and deletes the finished clone object. A clone that
 * did not succeed keeps its object, for inspection or for cleanup. With `staged`, it makes the VM a recreate of
 * `member` stages the member's replacement in ({@link buildStagedClone}) instead of the member.
 *
 * @returns `taken` when another call is making or made a VM of that name; this call then made nothing.
 * @throws {@link VdiError} `CLONE_FAILED`, `CLONE_TIMEOUT`, or an apiserver error.
 */
export async function cloneMember(
  ctx: VdiContext,
  input: {
    namespace: string;
    pool: string;
    member: string;
    /** The VM to clone: the golden VM, or a staged VM. */
    golden: VirtualMachine;
    ephemeral: boolean;
    /** The golden VM the member is made from, when `golden` is a staged VM. */
    source?: string | undefined;
    staged?: boolean;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
  },
): Promise<'made' | 'taken'> {
  const { namespace, pool, member, ephemeral, source, timeoutMs, signal } = input;
  const golden = await withLabelMap(ctx, namespace, input.golden);
  const clone = input.staged
    ? buildStagedClone({ namespace, pool, member, golden })
    : buildMemberClone({ namespace, pool, member, golden, ephemeral, source });
  const target = clone.spec.target?.name ?? member;
  // the timeout counts from the clone's creation, however long the create and the first read take
  const since = ctx.clock.now().getTime();
  if ((await createMemberClone(ctx, clone, target)) === 'taken') return 'taken';
  await finishMemberClone(ctx, { namespace, member: target, timeoutMs, signal, since });
  return 'made';
}

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

/**
 * Deletes a member's clone object so it makes nothing afterwards. A finished one makes nothing more, so when the
 * identity may not delete it, it stays and the refusal is returned; any other failure is thrown.
 */
async function deleteFinishedClone(
  ctx: VdiContext,
  namespace: string,
  name: string,
): Promise<string | undefined> {
  try {
    await ctx.cluster.resource(cloneKind).in(namespace).delete(name, { preconditions: {} });
    return undefined;
  } catch (error) {
    if (!isVdiError(error, 'FORBIDDEN')) throw error;
    const phase = (await ctx.cluster.getClone(namespace, name))?.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed') throw error;
    return error.message;
  }
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
  await ctx.cluster.deleteVm(target.namespace, target.member, { uid: vm.metadata.uid ?? '' });
  await deleteLeaseAsRead(ctx, removal);
  return undefined;
}

/**
 * Deletes what the given members left behind: the clone object first (so it cannot produce a VM afterwards),
 * then the VM, if it carries the pool's label. Emits `pool-progress` `removed` per member and marks its outcome.
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
  await forEachBounded(started, concurrency, async (outcome) => {
    const left = await deleteFinishedClone(ctx, namespace, outcome.clone);
    // only a VM this pool's clone made carries its label; any other VM of that name is left alone
    const vm = await ctx.cluster.getVm(namespace, outcome.member);
    if (vm?.metadata.labels?.[poolLabel] === pool) {
      const heldBy = await deleteUnlessClaimed(ctx, { namespace, pool, member: outcome.member }, vm);
      if (heldBy !== undefined) outcome.heldBy = heldBy;
    }
    if (outcome.heldBy !== undefined) outcome.removed = false;
    else if (left === undefined) outcome.removed = true;
    else outcome.cloneLeft = left;
    done += 1;
    ctx.events.emit('pool-progress', {
      poolId,
      member: outcome.member,
      step: 'removed',
      done,
      total: started.length,
    });
  });
}
