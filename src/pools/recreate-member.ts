import { setTimeout as sleep } from 'node:timers/promises';
import { readGoldenVm } from '../capacity/capacity-service.js';
import { leaseNameFor } from '../claims/lease-name.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { ephemeralLabel, leasePoolLabel, poolLabel, sourceAnnotation } from '../keys.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { isValidVmName } from '../validate.js';
import { cloneNameFor } from './clone-object.js';
import { cloneMember, defaultCloneTimeoutMs, waitForClone } from './clone-runner.js';

/** Options of {@link recreateMember}. @category pools */
export interface RecreateMemberOptions {
  namespace: string;
  /** The member as read from the cluster, or its name when it may already be gone (after a failed attempt). */
  vm: VirtualMachine | string;
  /** How long the clone, and the old VM's deletion, may take. @defaultValue 120000 */
  cloneTimeoutMs?: number;
  signal?: AbortSignal;
}

const goneInterval = 100;

/** Where a member comes from: its pool and golden VM, read from the VM, or from its claim and siblings once it is gone. */
async function originOf(
  ctx: VdiContext,
  namespace: string,
  member: string,
  vm: VirtualMachine | undefined,
): Promise<{ pool: string; source: string }> {
  if (vm) {
    const pool = vm.metadata.labels?.[poolLabel];
    const source = vm.metadata.annotations?.[sourceAnnotation];
    if (vm.metadata.labels?.[ephemeralLabel] !== 'true' || !pool || !source) {
      throw new VdiError(
        'INVALID_INPUT',
        `VM ${namespace}/${member} is not an ephemeral pool member (it needs the ${poolLabel} and ${ephemeralLabel}=true labels and the ${sourceAnnotation} annotation); only ephemeral members are recreated.`,
        { details: { member, namespace } },
      );
    }
    return { pool, source };
  }
  const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
  const pool = lease?.metadata.labels?.[leasePoolLabel];
  const siblings = pool ? await ctx.cluster.listVms(namespace, `${poolLabel}=${pool}`) : [];
  const source = siblings.map((sibling) => sibling.metadata.annotations?.[sourceAnnotation]).find(Boolean);
  if (!pool || !source) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `Member ${namespace}/${member} is gone, and neither its claim nor another member of its pool tells which golden VM to recreate it from.`,
      { details: { member, namespace } },
    );
  }
  return { pool, source };
}

async function waitUntilGone(
  ctx: VdiContext,
  namespace: string,
  member: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const started = ctx.clock.now().getTime();
  while (await ctx.cluster.getVm(namespace, member)) {
    if (ctx.clock.now().getTime() - started >= timeoutMs) {
      throw new VdiError(
        'CLONE_TIMEOUT',
        `VM ${namespace}/${member} was still being deleted after ${Math.round(timeoutMs / 1000)} s; check its finalizers with "kubectl get vm -n ${namespace} ${member} -o yaml".`,
        { retryable: true, details: { member, namespace } },
      );
    }
    try {
      await sleep(goneInterval, undefined, signal ? { signal } : {});
    } catch (error) {
      throw new VdiError('CANCELLED', `Recreating ${namespace}/${member} was cancelled by the caller.`, {
        cause: error,
      });
    }
  }
}

/**
 * Resets an ephemeral member: deletes its VM and clones it again from its golden VM (the member's
 * `corral.dev/vdi-source` annotation) under the same name, stopped, with its pool and ephemeral labels. It waits
 * for the clone's `Succeeded` and deletes the clone object.
 *
 * Safe to call again after a failure at any step: a clone already under way for the member is waited for, a
 * finished one is cleared away, a VM already gone is just cloned (its pool is then read from the member's claim
 * Lease and its golden VM from another member), and a golden VM that is missing is found out before anything is
 * deleted. The caller keeps the member claimed until this returns, so a half-recreated member is never handed out.
 *
 * @example
 * ```ts
 * await recreateMember(vdi.context, { namespace: 'corral-vms', vm: 'devpool-2' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the VM is not an ephemeral member; `GOLDEN_NOT_FOUND`;
 *   `MEMBER_NOT_FOUND` when the member is gone and nothing says where it came from; `CLONE_FAILED`, `CLONE_TIMEOUT`; `CANCELLED` when
 *   `signal` aborted it.
 * @category pools
 */
export async function recreateMember(ctx: VdiContext, options: RecreateMemberOptions): Promise<void> {
  const { namespace, signal } = options;
  const member = typeof options.vm === 'string' ? options.vm : (options.vm.metadata.name ?? '');
  if (!isValidVmName(member)) {
    throw new VdiError(
      'INVALID_INPUT',
      `"${member}" is not a valid VM name; pass the member as read, or its name.`,
      {
        details: { member, namespace },
      },
    );
  }
  const timeoutMs = options.cloneTimeoutMs ?? defaultCloneTimeoutMs;
  const cloneName = cloneNameFor(member);

  const pending = await ctx.cluster.getClone(namespace, cloneName);
  const pendingPhase = pending?.status?.phase;
  if (pending && pendingPhase !== 'Succeeded' && pendingPhase !== 'Failed') {
    // an earlier attempt already deleted the old VM and started the clone: finish that one
    await waitForClone(ctx, { namespace, name: cloneName, timeoutMs, signal });
    await ctx.cluster.deleteClone(namespace, cloneName);
    return;
  }
  if (pending) await ctx.cluster.deleteClone(namespace, cloneName);

  const current = await ctx.cluster.getVm(namespace, member);
  const { pool, source } = await originOf(ctx, namespace, member, current);
  const golden = await readGoldenVm(ctx, namespace, source);
  const poolId = formatPoolId({ kind: 'vm', namespace, pool });
  ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done: 0, total: 1 });
  try {
    if (current && !current.metadata.deletionTimestamp) {
      await ctx.cluster.deleteVm(namespace, member, { uid: current.metadata.uid ?? '' });
    }
    await waitUntilGone(ctx, namespace, member, timeoutMs, signal);
    await cloneMember(ctx, { namespace, pool, member, golden, ephemeral: true, timeoutMs, signal });
  } catch (error) {
    ctx.events.emit('pool-progress', { poolId, member, step: 'failed', done: 1, total: 1 });
    throw error;
  }
  ctx.events.emit('pool-progress', { poolId, member, step: 'ready', done: 1, total: 1 });
}
