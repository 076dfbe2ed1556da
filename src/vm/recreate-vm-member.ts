import type { VdiContext } from '../context.js';
import type { PoolMemberRef } from '../desktop-backend.js';
import { defaultCloneTimeoutMs } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { ephemeralLabel, poolLabel, rollToAnnotation, sourceAnnotation } from '../keys.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineClone } from '../kubevirt-types.js';
import { cloneNameFor } from './vm-clone-object.js';
import { cloneMember, finishMemberClone } from './vm-clone-runner.js';
import { waitUntilVmGone } from './wait-until-vm-gone.js';

/** Options of {@link recreateVmMember}. */
export interface RecreateVmMemberOptions {
  /** How long the clone, and the old VM's deletion, may take. @defaultValue 120000 */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** The golden VM the member's claim recorded, for a member whose VM is gone. */
  source?: string | undefined;
  /**
   * Make it from this golden VM instead of its own, ephemeral or not as its pool's members are: a roll-out's
   * rebuild, which a persistent member gets too.
   */
  from?: { golden: string; ephemeral: boolean } | undefined;
}

/**
 * The golden VM a member is made from: its own annotation, or once it is gone, the clone that last made it again,
 * its claim's record (`recorded`, told by the caller), another ephemeral member's annotation, or the clone of
 * another member under way.
 */
async function sourceOf(
  ctx: VdiContext,
  ref: PoolMemberRef,
  current: VirtualMachine | undefined,
  lastClone: VirtualMachineClone | undefined,
  recorded: string | undefined,
): Promise<string> {
  const { namespace, member, pool } = ref;
  if (current) {
    const source = current.metadata.annotations?.[sourceAnnotation];
    const labels = current.metadata.labels ?? {};
    if (labels[poolLabel] !== pool || labels[ephemeralLabel] !== 'true' || !source) {
      throw new VdiError(
        'INVALID_INPUT',
        `VM ${namespace}/${member} is not an ephemeral member of pool "${pool}" (it needs the ${poolLabel}=${pool} and ${ephemeralLabel}=true labels and the ${sourceAnnotation} annotation); only ephemeral members are recreated.`,
        { details: { member, namespace } },
      );
    }
    // KubeVirt refuses a clone into its own source, and the member would be deleted first
    if (source === member) {
      throw new VdiError(
        'INVALID_INPUT',
        `VM ${namespace}/${member} names itself as its golden VM in its ${sourceAnnotation} annotation, and a VM cannot be cloned into itself; set the annotation to the golden VM the pool was made from.`,
        { details: { member, namespace } },
      );
    }
    // a roll-out moves it to a new golden VM once its holder lets it go
    return current.metadata.annotations?.[rollToAnnotation] ?? source;
  }
  // a failed clone of this pool kept for inspection still names the golden VM
  const cloned = lastClone?.metadata.labels?.[poolLabel] === pool ? lastClone.spec.source.name : undefined;
  if (cloned) return cloned;
  // so does the claim that holds the member while it is reset
  if (recorded) return recorded;
  const siblings = await ctx.cluster.listVms(namespace, `${poolLabel}=${pool}`);
  const source =
    siblings
      .filter((sibling) => sibling.metadata.labels?.[ephemeralLabel] === 'true')
      .map((sibling) => sibling.metadata.annotations?.[sourceAnnotation])
      .find(Boolean) ??
    // every sibling may be part-way through its own reset, its VM gone and its clone under way
    (await ctx.cluster.resource(cloneKind).in(namespace).list(`${poolLabel}=${pool}`))
      .map((clone) => clone.spec.source.name)
      .find(Boolean);
  if (!source) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `Member ${namespace}/${member} is gone, and neither an ephemeral member of pool "${pool}" nor a clone of one tells which golden VM to recreate it from; resize the pool to make it again.`,
      { details: { member, namespace, pool } },
    );
  }
  return source;
}

async function readGolden(ctx: VdiContext, namespace: string, name: string): Promise<VirtualMachine> {
  const golden = await ctx.cluster.getVm(namespace, name);
  if (golden) return golden;
  throw new VdiError(
    'GOLDEN_NOT_FOUND',
    `golden VM "${name}" not found in namespace "${namespace}"; an ephemeral member is recreated from it, so restore it or recreate the pool.`,
    { details: { golden: name, namespace } },
  );
}

/**
 * Recreates an ephemeral VM member: deletes its VM and clones it again from its golden VM under the same name,
 * stopped, with its pool and ephemeral labels; waits for the clone's `Succeeded` and deletes the clone object.
 *
 * Safe to call again after a failure at any step, and beside a concurrent reset of the same member: a clone
 * already under way is waited for (one that a concurrent reset finished and removed counts as done), a finished
 * one is cleared away, a VM already gone is just cloned (its golden VM read from the failed clone, the source its
 * claim recorded, or another ephemeral member of the pool), and a missing golden VM is found out before anything is
 * deleted. Leases are not read: the caller names the pool and the recorded source.
 *
 * @throws `VdiError` `INVALID_INPUT` when the VM is not an ephemeral member of `ref.pool` or names itself as its golden VM; `GOLDEN_NOT_FOUND`;
 *   `MEMBER_NOT_FOUND` when the member is gone and no ephemeral sibling names its golden VM; `CLONE_FAILED`,
 *   `CLONE_TIMEOUT`; `CANCELLED` when `signal` aborted it.
 */
export async function recreateVmMember(
  ctx: VdiContext,
  ref: PoolMemberRef,
  options: RecreateVmMemberOptions = {},
): Promise<void> {
  const { namespace, member, pool } = ref;
  const { signal } = options;
  const timeoutMs = options.timeoutMs ?? defaultCloneTimeoutMs;
  const cloneName = cloneNameFor(member);

  const pending = await ctx.cluster.getClone(namespace, cloneName);
  const pendingPhase = pending?.status?.phase;
  if (pending && pendingPhase !== 'Succeeded' && pendingPhase !== 'Failed') {
    // an earlier or concurrent attempt already deleted the old VM and started the clone: finish that one
    await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
    return;
  }
  if (pending) await ctx.cluster.resource(cloneKind).in(namespace).delete(cloneName, { preconditions: {} });

  const current = await ctx.cluster.getVm(namespace, member);
  const source = options.from?.golden ?? (await sourceOf(ctx, ref, current, pending, options.source));
  const golden = await readGolden(ctx, namespace, source);
  const poolId = formatPoolId({ kind: 'vm', namespace, pool });
  ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done: 0, total: 1 });
  try {
    if (current && !current.metadata.deletionTimestamp) {
      await ctx.cluster.deleteVm(namespace, member, { uid: current.metadata.uid ?? '' });
    }
    await waitUntilVmGone(ctx, { namespace, member, timeoutMs, signal, timeoutCode: 'CLONE_TIMEOUT' });
    const made = await cloneMember(ctx, {
      namespace,
      pool,
      member,
      golden,
      ephemeral: options.from?.ephemeral ?? true,
      timeoutMs,
      signal,
    });
    // a concurrent reset of the member cloned it first: its clone is the one to finish
    if (made === 'taken') await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
  } catch (error) {
    ctx.events.emit('pool-progress', { poolId, member, step: 'failed', done: 1, total: 1 });
    throw error;
  }
  ctx.events.emit('pool-progress', { poolId, member, step: 'ready', done: 1, total: 1 });
}
