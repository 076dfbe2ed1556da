import { recordedSourceOf } from '../claims/lease-writes.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { leasePoolLabel, poolLabel } from '../keys.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { leaseNameFor } from '../lease-name.js';
import { validateMemberName, validateNamespace } from '../validate.js';
import { recreateVmMember } from '../vm/recreate-vm-member.js';

/** Options of {@link recreateMember}. @category pools */
export interface RecreateMemberOptions {
  namespace: string;
  /** The member as read from the cluster, or its name when it may already be gone (after a failed attempt). */
  vm: VirtualMachine | string;
  /** How long the clone, and the old VM's deletion, may take. @defaultValue 120000 */
  cloneTimeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Resets an ephemeral member: clones its golden VM (the member's `corral.dev/vdi-source` annotation) into a staged
 * VM beside it, then deletes the member and clones the staged VM into its name, stopped, with its pool and ephemeral
 * labels, and removes the staged VM. It waits for each clone's `Succeeded` and deletes the clone objects. A clone
 * that fails before the member's delete leaves the member as it was. A release does the same through the VM
 * backend's `resetMember`; this is the call for a member at hand.
 *
 * Safe to call again after a failure at any step: a clone already under way for the member is waited for, a
 * replacement already staged is used, a finished clone is cleared away, a VM already gone is just cloned (its pool is
 * then read from the member's claim Lease and its golden VM from its staged replacement, its failed clone, its claim
 * or another member), and a golden VM that is missing is found out before anything is deleted. The caller keeps the
 * member claimed until this returns, so a half-recreated member is never handed out.
 *
 * @example
 * ```ts
 * await recreateMember(vdi.context, { namespace: 'corral-vms', vm: 'devpool-2' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the VM is not an ephemeral member; `GOLDEN_NOT_FOUND`;
 *   `MEMBER_NOT_FOUND` when the member is gone and nothing says where it came from; `CLONE_FAILED`,
 *   `CLONE_TIMEOUT`; `CANCELLED` when `signal` aborted it.
 * @category pools
 */
export async function recreateMember(ctx: VdiContext, options: RecreateMemberOptions): Promise<void> {
  const { namespace } = options;
  const member = typeof options.vm === 'string' ? options.vm : (options.vm.metadata.name ?? '');
  validateNamespace(namespace);
  validateMemberName(member);
  const current = await ctx.cluster.getVm(namespace, member);
  // once the VM is gone, only its claim Lease still names its pool, and the golden VM it was made from
  const claim = current ? undefined : await ctx.cluster.getLease(namespace, leaseNameFor(member));
  const pool = current?.metadata.labels?.[poolLabel] ?? claim?.metadata.labels?.[leasePoolLabel];
  if (!current && !pool) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `Member ${namespace}/${member} is gone, and neither its claim nor another member of its pool tells which golden VM to recreate it from.`,
      { details: { member, namespace } },
    );
  }
  await recreateVmMember(
    ctx,
    { namespace, member, pool: pool ?? '' },
    {
      timeoutMs: options.cloneTimeoutMs,
      signal: options.signal,
      source: recordedSourceOf(claim, pool ?? ''),
    },
  );
}
