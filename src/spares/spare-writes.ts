import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { minReadyAnnotation, spareAnnotation } from '../keys.js';
import type { VirtualMachine } from '../kubevirt-types.js';

// a VM's status writes bump its resourceVersion too, so a few rereads are normal while it starts or stops
const attempts = 5;

/**
 * Sets one annotation of a member VM, conditional on the resourceVersion read, reading it again after a conflict.
 *
 * @returns `false` when the VM is gone.
 * @throws {@link VdiError} `CONFLICT` (retryable) when the VM kept changing.
 */
export async function annotateVm(
  ctx: VdiContext,
  read: VirtualMachine,
  key: string,
  value: string | null,
): Promise<boolean> {
  const namespace = read.metadata.namespace ?? '';
  const name = read.metadata.name ?? '';
  let vm: VirtualMachine | undefined = read;
  for (let attempt = 1; vm !== undefined; attempt += 1) {
    if ((vm.metadata.annotations?.[key] ?? null) === value) return true;
    try {
      await ctx.cluster.patchVm(namespace, name, {
        metadata: { resourceVersion: vm.metadata.resourceVersion, annotations: { [key]: value } },
      });
      return true;
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) return false;
      if (!isVdiError(error, 'CONFLICT')) throw error;
      if (attempt === attempts) {
        throw new VdiError(
          'CONFLICT',
          `VM ${namespace}/${name} kept changing while ${key} was written; try again.`,
          {
            retryable: true,
            details: { namespace, member: name },
            cause: error,
          },
        );
      }
      vm = await ctx.cluster.getVm(namespace, name);
    }
  }
  return false;
}

/**
 * Writes a pool's `minReady` on each of its member VMs, one member at a time. A write that stops part way leaves
 * members disagreeing; {@link readMinReady} then takes the largest, and writing again finishes it.
 */
export async function writeMinReady(
  ctx: VdiContext,
  members: readonly VirtualMachine[],
  minReady: number,
): Promise<void> {
  for (const vm of members) await annotateVm(ctx, vm, minReadyAnnotation, String(minReady));
}

/** Marks a member VM as a spare the keeper started (`at`), or drops the mark (`null`). `false` when it is gone. */
export async function markSpare(ctx: VdiContext, vm: VirtualMachine, at: string | null): Promise<boolean> {
  return await annotateVm(ctx, vm, spareAnnotation, at);
}
