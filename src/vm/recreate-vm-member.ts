import type { VdiContext } from '../context.js';
import type { PoolMemberRef } from '../desktop-backend.js';
import { defaultCloneTimeoutMs } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import {
  ephemeralLabel,
  poolLabel,
  recreateCloneAnnotation,
  rollToAnnotation,
  sourceAnnotation,
  stagedForAnnotation,
  stagedPoolLabel,
} from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import { cloneKind } from '../kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineClone } from '../kubevirt-types.js';
import { cloneNameFor, stagedNameFor } from './vm-clone-object.js';
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

/** The golden VM a clone makes a member from: its own record, else its source (a clone of the golden VM itself). */
function goldenOfClone(clone: VirtualMachineClone): string {
  return clone.metadata.annotations?.[sourceAnnotation] || clone.spec.source.name;
}

/**
 * The golden VM a member is made from: its own annotation, or once it is gone, the clone that last made it again,
 * its claim's record (`recorded`, told by the caller), the VM its replacement was staged in, another ephemeral
 * member's annotation, or the clone of another member under way.
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
  const cloned = lastClone?.metadata.labels?.[poolLabel] === pool ? goldenOfClone(lastClone) : undefined;
  if (cloned) return cloned;
  // so does the claim that holds the member while it is reset
  if (recorded) return recorded;
  const staged = await readStaged(ctx, ref);
  if (staged) return staged.metadata.annotations?.[sourceAnnotation] ?? '';
  const siblings = await ctx.cluster.listVms(namespace, `${poolLabel}=${pool}`);
  const source =
    siblings
      .filter((sibling) => sibling.metadata.labels?.[ephemeralLabel] === 'true')
      .map((sibling) => sibling.metadata.annotations?.[sourceAnnotation])
      .find(Boolean) ??
    // every sibling may be part-way through its own reset, its VM gone and its clone under way
    (await ctx.cluster.resource(cloneKind).in(namespace).list(`${poolLabel}=${pool}`))
      .map(goldenOfClone)
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

/** The VM `member`'s replacement is staged in, when it stands and was staged for it in `pool` (with its golden VM named). */
async function readStaged(ctx: VdiContext, ref: PoolMemberRef): Promise<VirtualMachine | undefined> {
  const { namespace, member, pool } = ref;
  const staged = await ctx.cluster.getVm(namespace, stagedNameFor(member));
  const { labels, annotations, deletionTimestamp } = staged?.metadata ?? {};
  const isStaged =
    labels?.[stagedPoolLabel] === pool &&
    annotations?.[stagedForAnnotation] === member &&
    annotations[sourceAnnotation];
  return staged && isStaged && !deletionTimestamp ? staged : undefined;
}

/** The staged VM, once its clone finished making it (a staged VM exists before its clone has restored its disks). */
async function readStagedReady(ctx: VdiContext, ref: PoolMemberRef): Promise<VirtualMachine | undefined> {
  const [staged, clone] = await Promise.all([
    readStaged(ctx, ref),
    ctx.cluster.getClone(ref.namespace, cloneNameFor(stagedNameFor(ref.member))),
  ]);
  return clone === undefined || clone.status?.phase === 'Succeeded' ? staged : undefined;
}

function isFinished(clone: VirtualMachineClone | undefined): boolean {
  const phase = clone?.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * Makes the member's replacement beside it, in {@link stagedNameFor}, and resolves with the staged VM once its
 * clone succeeded. A replacement an earlier attempt staged is taken as it is, and one whose clone is under way is
 * waited for; a failed attempt's leftovers (its clone object, a VM the clone began) are removed first.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when a VM that was not staged for the member has the name; `CLONE_FAILED`,
 *   `CLONE_TIMEOUT`, `CANCELLED`.
 */
async function stageReplacement(
  ctx: VdiContext,
  ref: PoolMemberRef,
  input: { golden: VirtualMachine; timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<VirtualMachine> {
  const { namespace, member, pool } = ref;
  const { timeoutMs, signal } = input;
  const name = stagedNameFor(member);
  const cloneName = cloneNameFor(name);
  const [existing, clone] = await Promise.all([
    ctx.cluster.getVm(namespace, name),
    ctx.cluster.getClone(namespace, cloneName),
  ]);
  if (existing && existing.metadata.annotations?.[stagedForAnnotation] !== member) {
    throw new VdiError(
      'INVALID_INPUT',
      `VM ${namespace}/${name} is in the way: a recreate of ${member} stages the member's replacement under that name, and that VM was not staged for it. Rename or delete it.`,
      { details: { namespace, member, staged: name } },
    );
  }
  if (clone && !isFinished(clone)) {
    // an earlier or concurrent attempt is staging it: that clone is the one to finish
    await finishMemberClone(ctx, { namespace, member: name, timeoutMs, signal });
  } else if (
    existing &&
    !existing.metadata.deletionTimestamp &&
    clone?.status?.phase !== 'Failed' &&
    // staged from another golden VM (a roll-out began meanwhile): made again from this one
    existing.metadata.annotations?.[sourceAnnotation] === input.golden.metadata.name
  ) {
    if (clone) await ctx.cluster.resource(cloneKind).in(namespace).delete(cloneName, { preconditions: {} });
  } else {
    // what a failed attempt left: its clone object, and the VM that clone may have begun
    if (clone) await ctx.cluster.resource(cloneKind).in(namespace).delete(cloneName, { preconditions: {} });
    if (existing) {
      await ctx.cluster.deleteVm(namespace, name, { uid: existing.metadata.uid ?? '' });
      await waitUntilVmGone(ctx, {
        namespace,
        member: name,
        timeoutMs,
        signal,
        timeoutCode: 'CLONE_TIMEOUT',
      });
    }
    const made = await cloneMember(ctx, {
      namespace,
      pool,
      member,
      golden: input.golden,
      ephemeral: true,
      staged: true,
      timeoutMs,
      signal,
    });
    if (made === 'taken') await finishMemberClone(ctx, { namespace, member: name, timeoutMs, signal });
  }
  const staged = await readStaged(ctx, ref);
  if (staged) return staged;
  throw new VdiError(
    'CLONE_FAILED',
    `The replacement of ${namespace}/${member} staged in VM ${name} disappeared before the member was made from it; recreate it again.`,
    { retryable: true, details: { namespace, member, staged: name } },
  );
}

/**
 * Deletes the member as read; `true` when a concurrent reset deleted it and made it again meanwhile (the delete's
 * `uid` precondition no longer holds), and this one has nothing to delete.
 */
async function deletedMeanwhile(
  ctx: VdiContext,
  namespace: string,
  member: string,
  current: VirtualMachine,
): Promise<boolean> {
  try {
    await ctx.cluster.deleteVm(namespace, member, { uid: current.metadata.uid ?? '' });
    return false;
  } catch (error) {
    if (!isConflictReason(error, 'Conflict') && !isVdiError(error, 'CONFLICT')) throw error;
    return true;
  }
}

/** Removes the staged VM once the member was made from it (and a clone object of it a crash left behind). */
async function removeStaged(ctx: VdiContext, ref: PoolMemberRef): Promise<void> {
  const { namespace, member } = ref;
  const name = stagedNameFor(member);
  await ctx.cluster.resource(cloneKind).in(namespace).delete(cloneNameFor(name), { preconditions: {} });
  const staged = await ctx.cluster.getVm(namespace, name);
  if (staged?.metadata.annotations?.[stagedForAnnotation] === member) {
    await ctx.cluster.deleteVm(namespace, name, { uid: staged.metadata.uid ?? '' });
  }
}

/**
 * Recreates an ephemeral VM member without leaving its holder without a desktop when a clone fails: first it clones
 * the golden VM into a staged VM beside the member ({@link stagedNameFor}), which leaves the member as it is; only
 * once that clone succeeded does it delete the member, clone the staged VM into the member's name (stopped, with its
 * pool and ephemeral labels and its golden VM named), delete the clone objects, and remove the staged VM.
 *
 * Safe to call again after a failure or a crash at any step, and beside a concurrent reset of the same member: a
 * clone under way (the staging or the member's) is waited for (one that a concurrent reset finished and removed
 * counts as done), a replacement already staged is used, finished clone objects are cleared away, and a member
 * already gone is made from its staged replacement or, without one, from the golden VM read from its failed clone,
 * the source its claim recorded, or another ephemeral member of the pool. A missing golden VM is found out before
 * anything is deleted. Leases are not read: the caller names the pool and the recorded source.
 *
 * @throws `VdiError` `INVALID_INPUT` when the VM is not an ephemeral member of `ref.pool`, names itself as its golden VM,
 *   or a VM not staged for it has the staged name; `GOLDEN_NOT_FOUND`; `MEMBER_NOT_FOUND` when the member is gone
 *   and nothing names its golden VM; `CLONE_FAILED`, `CLONE_TIMEOUT`; `CANCELLED` when `signal` aborted it.
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
  if (pending && !isFinished(pending) && pending.metadata.annotations?.[recreateCloneAnnotation] === 'true') {
    // an earlier or concurrent attempt already deleted the old VM and started the clone: finish that one
    await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
    await removeStaged(ctx, ref);
    return;
  }
  // the create's or grow's clone of a member a claim already took and used: let it finish, then recreate the member
  if (pending && !isFinished(pending)) await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
  else if (pending)
    await ctx.cluster.resource(cloneKind).in(namespace).delete(cloneName, { preconditions: {} });

  const current = await ctx.cluster.getVm(namespace, member);
  const source = options.from?.golden ?? (await sourceOf(ctx, ref, current, pending, options.source));
  const standing = current !== undefined && !current.metadata.deletionTimestamp;
  const poolId = formatPoolId({ kind: 'vm', namespace, pool });
  ctx.events.emit('pool-progress', { poolId, member, step: 'cloning', done: 0, total: 1 });
  try {
    let from: VirtualMachine;
    if (standing) {
      const golden = await readGolden(ctx, namespace, source);
      from = await stageReplacement(ctx, ref, { golden, timeoutMs, signal });
      if (await deletedMeanwhile(ctx, namespace, member, current)) {
        // a concurrent reset of the member deleted it and made it again from the same replacement: finish that one
        if (await ctx.cluster.getClone(namespace, cloneName)) {
          await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
        }
        await removeStaged(ctx, ref);
        ctx.events.emit('pool-progress', { poolId, member, step: 'ready', done: 1, total: 1 });
        return;
      }
    } else {
      // the member is gone or going already: from the replacement staged before its delete, else the golden VM
      const staged = await readStagedReady(ctx, ref);
      from =
        staged && (!options.from || staged.metadata.annotations?.[sourceAnnotation] === source)
          ? staged
          : await readGolden(ctx, namespace, source);
    }
    await waitUntilVmGone(ctx, { namespace, member, timeoutMs, signal, timeoutCode: 'CLONE_TIMEOUT' });
    const made = await cloneMember(ctx, {
      namespace,
      pool,
      member,
      golden: from,
      source,
      ephemeral: options.from?.ephemeral ?? true,
      recreate: true,
      timeoutMs,
      signal,
    });
    // a concurrent reset of the member cloned it first: its clone is the one to finish
    if (made === 'taken') await finishMemberClone(ctx, { namespace, member, timeoutMs, signal });
    await removeStaged(ctx, ref);
  } catch (error) {
    ctx.events.emit('pool-progress', { poolId, member, step: 'failed', done: 1, total: 1 });
    throw error;
  }
  ctx.events.emit('pool-progress', { poolId, member, step: 'ready', done: 1, total: 1 });
}
