import type { VdiContext } from '../../src/context.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachineClone } from '../../src/kubevirt-types.js';
import { createPool, deletePool } from '../../src/pools/pool-service.js';
import { simulatorAnnotations } from '../../src/testing/kubevirt/fault-knobs.js';

/** The adapter, with the simulator's phase-delay knob on every clone it creates. */
export class SlowCloneCluster extends KubeCluster {
  phaseMs = 500;

  override createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    const annotations = {
      ...clone.metadata.annotations,
      [simulatorAnnotations.phaseDelayMs]: String(this.phaseMs),
    };
    return super.createClone(namespace, { ...clone, metadata: { ...clone.metadata, annotations } });
  }
}

/** Creates a pool of `size` members from the golden VM `golden` and deletes it again: its wall time and requests. */
export async function timePoolCreate(
  ctx: VdiContext,
  name: string,
  size: number,
  concurrency: number,
): Promise<{ ms: number; requests: number }> {
  ctx.cluster.requestCounts.clear();
  const started = performance.now();
  const pool = await createPool(ctx, { name, from: 'golden', size, concurrency });
  const ms = performance.now() - started;
  if (pool.members.length !== size) throw new Error(`pool ${name} has ${pool.members.length} members`);
  const requests = ctx.cluster.requestTotal;
  await deletePool(ctx, { name });
  return { ms, requests };
}
