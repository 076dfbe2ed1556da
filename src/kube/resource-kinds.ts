import { formatMicroTime } from '../format-time.js';
import type {
  ConfigMapObject,
  LeaseObject,
  NodeObject,
  ObjectMeta,
  PersistentVolumeClaimObject,
  PodObject,
  ServiceObject,
} from '../kube-objects.js';
import type {
  PermittedHostDevices,
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
} from '../kubevirt-types.js';
import type { ResourceKind } from './resource.js';

// Lease times are MicroTime: the apiserver rejects them without the microsecond digits.
function microTime(value: string | undefined): string | undefined {
  return value === undefined ? undefined : formatMicroTime(value);
}

/** The claim primitive: a Lease per claimed member, first writer wins. @category adapters */
export const leaseKind: ResourceKind<LeaseObject> = {
  kind: 'Lease',
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  namespaced: true,
  cache: 'leases',
  conflictsCounted: true,
  goneOnDelete: true,
  fromWire: (object) => {
    const { metadata, spec = {} } = object as LeaseObject;
    return { metadata, spec };
  },
  toWire: (lease) => ({
    metadata: lease.metadata,
    spec: {
      ...lease.spec,
      acquireTime: microTime(lease.spec.acquireTime),
      renewTime: microTime(lease.spec.renewTime),
    },
  }),
};

/** KubeVirt's VirtualMachines: the VM pools' members. @category adapters */
export const vmKind: ResourceKind<VirtualMachine, 'stop'> = {
  kind: 'VirtualMachine',
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachines',
  namespaced: true,
  subresources: ['stop'],
  subresourceGroup: 'subresources.kubevirt.io',
  cache: 'vms',
};

/** The running instance of a VirtualMachine, of the same name. @category adapters */
export const vmiKind: ResourceKind<VirtualMachineInstance, 'vnc' | 'console'> = {
  kind: 'VirtualMachineInstance',
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachineinstances',
  namespaced: true,
  subresources: ['vnc', 'console'],
  subresourceGroup: 'subresources.kubevirt.io',
  cache: 'vmis',
};

/** KubeVirt's clones of a golden VM, in the newest `clone.kubevirt.io` version the cluster serves. @category adapters */
export const cloneKind: ResourceKind<VirtualMachineClone> = {
  kind: 'VirtualMachineClone',
  group: 'clone.kubevirt.io',
  // both carry the spec the SDK writes
  version: {
    discover: ['v1beta1', 'v1alpha1'],
    apiName: "KubeVirt's clone API",
    whenUnserved:
      'which VM pools make their members with. Install KubeVirt (v1.5.0 or later serves v1beta1) and check that its ' +
      'operator is running; if the apiserver was just restarting, try again.',
  },
  plural: 'virtualmachineclones',
  namespaced: true,
};

/**
 * KubeVirt's snapshots of a VM, in the newest `snapshot.kubevirt.io` version the cluster serves: a pool create or
 * grow of several members snapshots the golden VM once and clones every member from it. @category adapters
 */
export const snapshotKind: ResourceKind<VirtualMachineSnapshot> = {
  kind: 'VirtualMachineSnapshot',
  group: 'snapshot.kubevirt.io',
  // both carry the spec the SDK writes
  version: {
    discover: ['v1beta1', 'v1alpha1'],
    apiName: "KubeVirt's snapshot API",
    whenUnserved:
      "which a pool create or grow of several members snapshots the golden VM with once. Without it each member's " +
      'clone snapshots the golden VM itself, one after another.',
  },
  plural: 'virtualmachinesnapshots',
  namespaced: true,
};

/** The part of KubeVirt's own custom resource that the SDK reads. @category objects */
export interface KubeVirtConfiguration {
  metadata: ObjectMeta;
  spec?: { configuration?: { permittedHostDevices?: PermittedHostDevices } };
}

/** KubeVirt's own configuration (`permittedHostDevices`). @category adapters */
export const kubeVirtKind: ResourceKind<KubeVirtConfiguration> = {
  kind: 'KubeVirt',
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'kubevirts',
  namespaced: true,
};

/** A container pool's spec and a pool's settings. @category adapters */
export const configMapKind: ResourceKind<ConfigMapObject> = {
  kind: 'ConfigMap',
  group: '',
  version: 'v1',
  plural: 'configmaps',
  namespaced: true,
  cache: 'configMaps',
  goneOnDelete: true,
};

/** A container pool's members. @category adapters */
export const podKind: ResourceKind<PodObject, 'exec'> = {
  kind: 'Pod',
  group: '',
  version: 'v1',
  plural: 'pods',
  namespaced: true,
  subresources: ['exec'],
};

/** The stable address of a container pool's member. @category adapters */
export const serviceKind: ResourceKind<ServiceObject> = {
  kind: 'Service',
  group: '',
  version: 'v1',
  plural: 'services',
  namespaced: true,
};

/** A container pool member's home volume. @category adapters */
export const pvcKind: ResourceKind<PersistentVolumeClaimObject> = {
  kind: 'PersistentVolumeClaim',
  group: '',
  version: 'v1',
  plural: 'persistentvolumeclaims',
  namespaced: true,
};

/** The cluster's Nodes, which capacity admission reads. @category adapters */
export const nodeKind: ResourceKind<NodeObject> = {
  kind: 'Node',
  group: '',
  version: 'v1',
  plural: 'nodes',
  namespaced: false,
};
