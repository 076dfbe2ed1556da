import type { KubeConfig } from '@kubernetes/client-node';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachineClone } from '../../src/kubevirt-types.js';

/**
 * The adapter with the simulator's fault knobs added to the clone objects it creates, as a test's own annotations:
 * `faults[target]` is what the clone made for `target` carries, and `faultsFrom[source]` what every clone of the
 * VM `source` carries (a storage class that refuses to snapshot that VM's disks fails each of its clones).
 */
export class CloneFaultCluster extends KubeCluster {
  constructor(
    kubeConfig: KubeConfig,
    readonly faults: Record<string, Record<string, string>> = {},
    readonly faultsFrom: Record<string, Record<string, string>> = {},
  ) {
    super(kubeConfig);
  }

  override createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    const knobs = {
      ...this.faultsFrom[clone.spec.source.name],
      ...this.faults[clone.spec.target?.name ?? ''],
    };
    if (Object.keys(knobs).length === 0) return super.createClone(namespace, clone);
    const annotations = { ...clone.metadata.annotations, ...knobs };
    return super.createClone(namespace, { ...clone, metadata: { ...clone.metadata, annotations } });
  }
}
