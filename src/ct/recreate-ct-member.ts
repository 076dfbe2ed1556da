import type { VdiContext } from '../context.js';
import type { PoolMemberRef, ResetMemberOptions } from '../desktop-backend.js';
import { defaultCloneTimeoutMs } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { poolLabel } from '../keys.js';
import { podKind } from '../kube/resource-kinds.js';
import type { PodObject } from '../kube-objects.js';
import {
  createMemberPod,
  deletePodAndWait,
  ensureHomeClaim,
  ensureService,
  wipeHomeClaim,
} from './ct-member-writes.js';
import { readCtPool } from './ct-pool-store.js';

/**
 * Makes a container member again from its pool's spec under the same name: deletes its Pod and waits until it
 * is gone, wipes the home volume when the spec says `onRelease: wipe` (and `wipeHome` is set), makes the
 * Service and home claim it lacks, and creates the Pod. Resolves with the new Pod, whose uid differs.
 *
 * Safe to call again after a failure at any step: a Pod already gone is just made, a wipe is done again (the
 * home is empty either way), and objects already there are kept.
 *
 * @throws `VdiError` `MEMBER_NOT_FOUND` when the pool's spec is gone, so nothing tells what to make it from;
 *   `INVALID_INPUT` when the Pod belongs to another pool; `CLONE_TIMEOUT` when the old Pod outlives the
 *   timeout; `CANCELLED`.
 */
export async function recreateCtMember(
  ctx: VdiContext,
  ref: PoolMemberRef,
  options: ResetMemberOptions & { wipeHome: boolean },
): Promise<PodObject> {
  const { namespace, member, pool } = ref;
  const stored = await readCtPool(ctx, namespace, pool);
  if (!stored) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `Container pool "${pool}" in namespace "${namespace}" has no spec any more, so member ${member} cannot be made again; apply the pool's spec, then release again.`,
      { details: { namespace, member, pool } },
    );
  }
  const current = await ctx.cluster.resource(podKind).in(namespace).get(member);
  const belongs = current?.metadata.labels?.[poolLabel];
  if (current && belongs !== pool) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pod ${namespace}/${member} belongs to pool "${belongs ?? ''}", not "${pool}".`,
      {
        details: { namespace, member, pool },
      },
    );
  }
  const poolId = formatPoolId({ kind: 'ct', namespace, pool });
  const target = { namespace, stored, member };
  ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done: 0, total: 1 });
  try {
    await deletePodAndWait(
      ctx,
      { namespace, member },
      {
        timeoutMs: options.timeoutMs ?? defaultCloneTimeoutMs,
        signal: options.signal,
      },
    );
    const homeClaim =
      options.wipeHome && stored.spec.home?.onRelease === 'wipe'
        ? await wipeHomeClaim(ctx, target)
        : await ensureHomeClaim(ctx, target);
    await ensureService(ctx, target);
    const pod = await createMemberPod(ctx, target, homeClaim);
    ctx.events.emit('pool-progress', { poolId, member, step: 'ready', done: 1, total: 1 });
    return pod;
  } catch (error) {
    ctx.events.emit('pool-progress', { poolId, member, step: 'failed', done: 1, total: 1 });
    throw error;
  }
}
