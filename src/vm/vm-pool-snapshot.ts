import { randomBytes } from 'node:crypto';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { poolLabel, sourceAnnotation } from '../keys.js';
import { snapshotKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineSnapshot } from '../kubevirt-types.js';
import { formatDuration } from '../parse-duration.js';
import { pollKubeVirtObject } from './poll-kubevirt-object.js';

/**
 * The VirtualMachineSnapshot of `golden` that one create or grow of `pool` restores its members from. Its name is
 * new for each call (`<pool>-snapshot-<8 hex digits>`), so two calls at once never share or meet each other's; the
 * pool label lets a pool delete find one a stopped call left.
 *
 * @category pools
 */
export function buildPoolSnapshot(input: {
  namespace: string;
  pool: string;
  golden: VirtualMachine;
}): VirtualMachineSnapshot {
  const { namespace, pool, golden } = input;
  const goldenName = golden.metadata.name ?? '';
  return {
    kind: 'VirtualMachineSnapshot',
    metadata: {
      name: `${pool}-snapshot-${randomBytes(4).toString('hex')}`,
      namespace,
      labels: { [poolLabel]: pool },
      annotations: { [sourceAnnotation]: goldenName },
    },
    spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: goldenName } },
  };
}

/** Why a snapshot failed, from its status. */
function snapshotFailure(snapshot: VirtualMachineSnapshot): string {
  const condition = snapshot.status?.conditions?.find((each) => each.message);
  return (
    snapshot.status?.error?.message ??
    condition?.message ??
    `KubeVirt gave no reason in its status; its events say why: "kubectl describe virtualmachinesnapshot -n ${snapshot.metadata.namespace} ${snapshot.metadata.name}"`
  );
}

/**
 * Takes one snapshot of `golden` for a create or grow of `pool` and waits until KubeVirt says it is ready to use.
 * Polls with a short real interval; the deadline comes from `ctx.clock`.
 *
 * @returns the snapshot's name, or `skipped` with the reason when the identity may not get, delete or create
 *   VirtualMachineSnapshots (asked before one is made) or the cluster serves no snapshot API: the caller then
 *   clones from the VM, one snapshot per member.
 * @throws {@link VdiError} `CLONE_FAILED` when the snapshot fails or disappears, `CLONE_TIMEOUT` after `timeoutMs`,
 *   `CANCELLED` when `signal` aborts the wait; the snapshot is deleted first, or a `pool-snapshot` `left` event
 *   says why it could not be.
 */
export async function takePoolSnapshot(
  ctx: VdiContext,
  input: {
    namespace: string;
    pool: string;
    /** The pool's id in the events. */
    poolId: string;
    golden: VirtualMachine;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
  },
): Promise<{ snapshot: string } | { skipped: string }> {
  const { namespace, timeoutMs, signal } = input;
  const wanted = buildPoolSnapshot(input);
  const name = wanted.metadata.name ?? '';
  const snapshots = ctx.cluster.resource(snapshotKind).in(namespace);
  const started = ctx.clock.now().getTime();
  try {
    // the apiserver authorizes before it looks the new name up, so a miss on both says they are allowed: a refusal
    // is met before anything exists, and a snapshot once made can be read and deleted again
    await snapshots.get(name);
    await snapshots.delete(name, { preconditions: {}, dryRun: ['All'] });
    await snapshots.create(wanted);
  } catch (error) {
    if (isVdiError(error, 'FORBIDDEN') || isVdiError(error, 'UNSUPPORTED_BACKEND')) {
      return { skipped: skipReason(namespace, error) };
    }
    throw error;
  }
  try {
    await waitForSnapshot(ctx, { namespace, name, started, timeoutMs, signal });
    return { snapshot: name };
  } catch (error) {
    await dropPoolSnapshot(ctx, { namespace, poolId: input.poolId, snapshot: name });
    throw error;
  }
}

function skipReason(namespace: string, error: VdiError): string {
  const forbidden = isVdiError(error, 'FORBIDDEN');
  const why = forbidden
    ? `this identity may not create, get and delete virtualmachinesnapshots (snapshot.kubevirt.io) in namespace "${namespace}"`
    : 'the cluster serves no snapshot.kubevirt.io API';
  const fix = forbidden ? ' Grant the permission to snapshot the golden VM once.' : '';
  return `${why}, so each member's clone snapshots the golden VM itself, and KubeVirt takes those snapshots one after another: slower for many members.${fix}`;
}

function waitForSnapshot(
  ctx: VdiContext,
  input: {
    namespace: string;
    name: string;
    started: number;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
  },
): Promise<true> {
  const { namespace, name, started, timeoutMs, signal } = input;
  return pollKubeVirtObject(ctx, {
    started,
    timeoutMs,
    signal,
    what: `VirtualMachineSnapshot ${namespace}/${name}`,
    read: () => ctx.cluster.resource(snapshotKind).in(namespace).get(name),
    settled: (snapshot) => {
      if (snapshot.status?.readyToUse === true) return true;
      if (snapshot.status?.phase !== 'Failed') return undefined;
      const reason = snapshotFailure(snapshot);
      throw new VdiError(
        'CLONE_FAILED',
        `VirtualMachineSnapshot ${namespace}/${name} of the golden VM failed: ${reason}.`,
        { details: { snapshot: name, namespace, reason } },
      );
    },
    gone: () =>
      new VdiError(
        'CLONE_FAILED',
        `VirtualMachineSnapshot ${namespace}/${name} disappeared before it was ready.`,
        {
          details: { snapshot: name, namespace },
        },
      ),
    timedOut: (snapshot) =>
      new VdiError(
        'CLONE_TIMEOUT',
        `timed out after ${formatDuration(timeoutMs)} waiting for VirtualMachineSnapshot ${namespace}/${name} of the ` +
          `golden VM to be ready: it was in phase ${snapshot.status?.phase || 'not set'}, and this call deletes it. ` +
          `KubeVirt's events for it outlast it: "kubectl get events -n ${namespace} --field-selector ` +
          `involvedObject.name=${name}". A stuck snapshot almost always has one of two causes: the ` +
          "VolumeSnapshotClass the golden VM's disks need is missing, or one of its PVCs cannot be snapshotted.",
        { retryable: true, details: { snapshot: name, namespace, phase: snapshot.status?.phase ?? '' } },
      ),
  });
}

/**
 * The snapshots a create or grow of `pool` took and did not delete (it was stopped), by name; none when this
 * identity may not list snapshots or the cluster has no snapshot API.
 */
export async function listPoolSnapshots(ctx: VdiContext, namespace: string, pool: string): Promise<string[]> {
  try {
    const snapshots = await ctx.cluster.resource(snapshotKind).in(namespace).list(`${poolLabel}=${pool}`);
    return snapshots.map((snapshot) => snapshot.metadata.name ?? '');
  } catch (error) {
    if (isVdiError(error, 'FORBIDDEN')) return [];
    throw error;
  }
}

/** Deletes a pool's snapshot; `false` when it was gone already. */
export function deletePoolSnapshot(ctx: VdiContext, namespace: string, name: string): Promise<boolean> {
  return ctx.cluster.resource(snapshotKind).in(namespace).delete(name, { preconditions: {} });
}

/**
 * Deletes the snapshot a create or grow restored its members from, emitting `pool-snapshot` `deleted`, or `left`
 * with the reason when it cannot: it makes nothing, and a pool delete removes it.
 */
export async function dropPoolSnapshot(
  ctx: VdiContext,
  input: { namespace: string; poolId: string; snapshot: string },
): Promise<void> {
  const { namespace, poolId, snapshot } = input;
  try {
    if (await deletePoolSnapshot(ctx, namespace, snapshot)) {
      ctx.events.emit('pool-snapshot', { poolId, step: 'deleted', snapshot });
    }
  } catch (error) {
    ctx.events.emit('pool-snapshot', {
      poolId,
      step: 'left',
      snapshot,
      reason: `${(error as Error).message}; it makes nothing, and "corral-vdi pool delete" removes it`,
    });
  }
}
