import { setTimeout as sleep } from 'node:timers/promises';
import type { VdiContext } from '../context.js';
import { VdiError, type VdiErrorCode } from '../errors.js';
import { formatDuration } from '../parse-duration.js';

const goneInterval = 100;

/** KubeVirt's finalizers start with this; its controller removes them once a deleted VM's instance is down. */
const kubevirtFinalizerPrefix = 'kubevirt.io/';

/**
 * Waits until a deleted VM is gone: KubeVirt's controller keeps a finalizer on every VM and removes it once the VM's
 * instance is down, so a delete answers while the VM is still there, being deleted. With `uid`, another VM made
 * under the same name since counts as gone. With `untilKubevirtLetsGo`, a VM that only finalizers of others still
 * hold counts as gone too: waiting for those is their owner's business, not KubeVirt's.
 *
 * @throws {@link VdiError} `timeoutCode` (retryable) when it is still there after `timeoutMs`, naming how to see its
 *   finalizers; `CANCELLED` when `signal` aborts.
 */
export async function waitUntilVmGone(
  ctx: VdiContext,
  input: {
    namespace: string;
    member: string;
    uid?: string;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
    timeoutCode: VdiErrorCode;
    untilKubevirtLetsGo?: boolean;
  },
): Promise<void> {
  const { namespace, member, uid, timeoutMs, signal } = input;
  const heldByKubevirt = (finalizers: string[] | undefined) =>
    (finalizers ?? []).some((finalizer) => finalizer.startsWith(kubevirtFinalizerPrefix));
  const started = ctx.clock.now().getTime();
  for (;;) {
    const vm = await ctx.cluster.getVm(namespace, member);
    if (!vm || (uid !== undefined && vm.metadata.uid !== uid)) return;
    if (input.untilKubevirtLetsGo && vm.metadata.deletionTimestamp && !heldByKubevirt(vm.metadata.finalizers))
      return;
    if (ctx.clock.now().getTime() - started >= timeoutMs) {
      throw new VdiError(
        input.timeoutCode,
        `VM ${namespace}/${member} was still being deleted after ${formatDuration(timeoutMs)}; check its finalizers with "kubectl get vm -n ${namespace} ${member} -o yaml".`,
        { retryable: true, details: { member, namespace } },
      );
    }
    try {
      await sleep(goneInterval, undefined, signal ? { signal } : {});
    } catch (error) {
      throw new VdiError(
        'CANCELLED',
        `Waiting for ${namespace}/${member} to go was cancelled by the caller.`,
        {
          cause: error,
        },
      );
    }
  }
}
