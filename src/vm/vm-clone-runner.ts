import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { goldenLabel } from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineClone } from '../kubevirt-types.js';
import { formatDuration } from '../parse-duration.js';
import { pollKubeVirtObject } from './poll-kubevirt-object.js';
import { buildMemberClone, buildStagedClone, cloneNameFor } from './vm-clone-object.js';

// What KubeVirt's clone controller writes in a condition while it works (kept there when the clone fails), and in
// its Progressing condition when the clone fails: neither says why.
const untellingReasons = new Set(['Still processing', 'Failed']);

/**
 * Why a clone failed, from its conditions; KubeVirt often gives its reason only as an event of the clone (its
 * conditions keep saying "Still processing"), and then the answer says where to read it.
 */
export function failureReason(clone: VirtualMachineClone): string {
  const conditions = clone.status?.conditions ?? [];
  const telling =
    conditions.find((condition) => condition.message) ??
    conditions.find((condition) => condition.reason && !untellingReasons.has(condition.reason));
  if (telling) return [telling.reason, telling.message].filter(Boolean).join(': ');
  const { namespace = '', name = '' } = clone.metadata;
  return `KubeVirt gave no reason in its status; its events say why: "kubectl describe virtualmachineclone -n ${namespace} ${name}"`;
}

/**
 * Waits until a clone reaches `Succeeded`. The target VM appears before its disks are restored, so only the
 * phase tells that a member is ready. Polls with a short real interval; the deadline comes from `ctx.clock`.
 *
 * @throws {@link VdiError} `CLONE_FAILED` when the clone fails (with KubeVirt's reason) or disappears;
 *   `CLONE_TIMEOUT` after `timeoutMs`, naming the clone object and the usual causes.
 */
export function waitForClone(
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
  return pollKubeVirtObject(ctx, {
    what: `VirtualMachineClone ${namespace}/${name}`,
    read: () => ctx.cluster.getClone(namespace, name),
    settled: (clone) => {
      if (clone.status?.phase === 'Succeeded') return clone;
      if (clone.status?.phase !== 'Failed') return undefined;
      const reason = failureReason(clone);
      throw new VdiError('CLONE_FAILED', `VirtualMachineClone ${namespace}/${name} failed: ${reason}.`, {
        details: { clone: name, namespace, reason },
      });
    },
    gone: () =>
      new VdiError(
        'CLONE_FAILED',
        `VirtualMachineClone ${namespace}/${name} disappeared before it finished.`,
        {
          details: { clone: name, namespace },
        },
      ),
    timedOut: (clone) => {
      const phase = clone.status?.phase;
      return new VdiError(
        'CLONE_TIMEOUT',
        `timed out after ${formatDuration(timeoutMs)} waiting for the clone to produce VM ${namespace}/` +
          `${clone.spec.target?.name ?? name}: VirtualMachineClone ${namespace}/${name} is in phase ` +
          `${phase || 'not set'}. See its phase with "kubectl get virtualmachineclone -n ` +
          `${namespace} ${name}". A stuck clone almost always has one of two causes: the StorageClass or ` +
          "VolumeSnapshotClass the golden VM's disks need is missing or cannot snapshot, or one of its PVCs cannot be " +
          'snapshotted.',
        { retryable: true, details: { clone: name, namespace, phase: phase ?? '' } },
      );
    },
    started: input.since ?? ctx.clock.now().getTime(),
    timeoutMs,
    signal,
  });
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
export async function withLabelMap(
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
    /** Whether a recreate makes the member (see {@link buildMemberClone}). */
    recreate?: boolean;
    /** A ready snapshot of `golden` to restore the member from (see {@link buildMemberClone}). */
    snapshot?: string | undefined;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
  },
): Promise<'made' | 'taken'> {
  const { namespace, pool, member, ephemeral, source, timeoutMs, signal } = input;
  const golden = await withLabelMap(ctx, namespace, input.golden);
  const clone = input.staged
    ? buildStagedClone({ namespace, pool, member, golden })
    : buildMemberClone({
        namespace,
        pool,
        member,
        golden,
        ephemeral,
        source,
        recreate: input.recreate,
        snapshot: input.snapshot,
      });
  const target = clone.spec.target?.name ?? member;
  // the timeout counts from the clone's creation, however long the create and the first read take
  const since = ctx.clock.now().getTime();
  if ((await createMemberClone(ctx, clone, target)) === 'taken') return 'taken';
  await finishMemberClone(ctx, { namespace, member: target, timeoutMs, signal, since });
  return 'made';
}
