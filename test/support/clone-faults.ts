import type { KubeConfig } from '@kubernetes/client-node';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachineClone } from '../../src/kubevirt-types.js';

/**
 * The adapter with the simulator's fault knobs added to the clone objects of chosen members, as a test's own
 * annotations: `faults[target]` is what the clone made for `target` carries.
 */
export class CloneFaultCluster extends KubeCluster {
  constructor(
    kubeConfig: KubeConfig,
    readonly faults: Record<string, Record<string, string>> = {},
  ) {
    super(kubeConfig);
  }

  override createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    const knobs = this.faults[clone.spec.target?.name ?? ''];
    if (!knobs) return super.createClone(namespace, clone);
    const annotations = { ...clone.metadata.annotations, ...knobs };
    return super.createClone(namespace, { ...clone, metadata: { ...clone.metadata, annotations } });
  }
}
