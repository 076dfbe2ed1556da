import type { ConfigMapObject, LeaseObject, ObjectMeta } from '../kube-objects.js';
import type { VirtualMachine, VirtualMachineInstance, VmDevices } from '../kubevirt-types.js';

// kubectl apply's copy of the whole object: no reader of the caches looks at it, and it can be the biggest field
const lastAppliedAnnotation = 'kubectl.kubernetes.io/last-applied-configuration';

/** The same fields without those whose value is `undefined`, so a kept object has no empty keys. */
function definedFields<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}

/** Metadata without `managedFields`, which the apiserver keeps for server-side apply and the SDK never reads. */
function withoutManagedFields(metadata: ObjectMeta): ObjectMeta {
  const { managedFields: _, ...kept } = metadata as ObjectMeta & { managedFields?: unknown };
  return kept;
}

/**
 * What the Lease cache keeps of a Lease: all of it but `metadata.managedFields`. A Lease read from the cache may be
 * written back whole (a renewal replaces it), so its other metadata stays; the apiserver keeps the managed fields
 * of an update that sends none.
 */
export function storedLease(lease: LeaseObject): LeaseObject {
  return { metadata: withoutManagedFields(lease.metadata), spec: lease.spec };
}

function storedDevices(devices: VmDevices | undefined): VmDevices | undefined {
  if (devices === undefined) return undefined;
  const deviceRequest = ({ name, deviceName }: { name: string; deviceName: string }) => ({
    name,
    deviceName,
  });
  return definedFields({
    gpus: devices.gpus?.map(deviceRequest),
    hostDevices: devices.hostDevices?.map(deviceRequest),
    autoattachGraphicsDevice: devices.autoattachGraphicsDevice,
    autoattachSerialConsole: devices.autoattachSerialConsole,
  });
}

/**
 * What the VM cache keeps of a VM: the fields a member's facts are read from (`toVmMemberFacts`): its metadata
 * without `managedFields` and kubectl's last-applied copy, its run fields, its template's consoles and devices, and
 * its printable status and pending start or stop. Cached VMs are only read and merge-patched, never written back
 * whole, so the rest of the template (disks, volumes, networks) and of the status is left to a fresh read.
 */
export function storedVm(vm: VirtualMachine): VirtualMachine {
  const metadata = withoutManagedFields(vm.metadata);
  if (metadata.annotations?.[lastAppliedAnnotation] !== undefined) {
    const { [lastAppliedAnnotation]: _, ...annotations } = metadata.annotations;
    metadata.annotations = annotations;
  }
  const devices = storedDevices(vm.spec.template?.spec?.domain?.devices);
  return definedFields({
    apiVersion: vm.apiVersion,
    kind: vm.kind,
    metadata,
    spec: definedFields({
      runStrategy: vm.spec.runStrategy,
      running: vm.spec.running,
      template: devices && { spec: { domain: { devices } } },
    }),
    status:
      vm.status &&
      definedFields({
        printableStatus: vm.status.printableStatus,
        stateChangeRequests: vm.status.stateChangeRequests,
      }),
  });
}

/**
 * What the VMI cache keeps of a VMI: its metadata without `managedFields`, its consoles and devices, and the phase,
 * node and addresses a member's facts show.
 */
export function storedVmi(vmi: VirtualMachineInstance): VirtualMachineInstance {
  const devices = storedDevices(vmi.spec?.domain?.devices);
  return definedFields({
    apiVersion: vmi.apiVersion,
    kind: vmi.kind,
    metadata: withoutManagedFields(vmi.metadata),
    spec: devices && { domain: { devices } },
    status:
      vmi.status &&
      definedFields({
        phase: vmi.status.phase,
        nodeName: vmi.status.nodeName,
        interfaces: vmi.status.interfaces?.map(({ name, ipAddress }) => definedFields({ name, ipAddress })),
      }),
  });
}

/**
 * What the ConfigMap cache keeps of a pool's ConfigMap (a container pool's spec, a pool's settings): its data and its
 * metadata without `managedFields` and kubectl's last-applied copy, which would double the spec it holds.
 */
export function storedConfigMap(configMap: ConfigMapObject): ConfigMapObject {
  const metadata = withoutManagedFields(configMap.metadata);
  if (metadata.annotations?.[lastAppliedAnnotation] !== undefined) {
    const { [lastAppliedAnnotation]: _, ...annotations } = metadata.annotations;
    metadata.annotations = annotations;
  }
  return definedFields({ metadata, data: configMap.data });
}
