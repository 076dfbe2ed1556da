import type { ObjectMeta } from './kube-objects.js';

/** A GPU or host device a VM asks for; `deviceName` is an extended resource name. @category objects */
export interface VmDeviceRequest {
  name: string;
  deviceName: string;
}

/** The domain devices of a VM template that the SDK looks at. @category objects */
export interface VmDevices {
  gpus?: VmDeviceRequest[];
  hostDevices?: VmDeviceRequest[];
  autoattachGraphicsDevice?: boolean;
  autoattachSerialConsole?: boolean;
  clientPassthrough?: Record<string, unknown>;
  [field: string]: unknown;
}

/** KubeVirt run strategies. @category objects */
export type RunStrategy = 'Always' | 'Halted' | 'Manual' | 'RerunOnFailure' | 'Once';

/** A `kubevirt.io/v1` VirtualMachine, with the fields the SDK uses typed and the rest kept. @category objects */
export interface VirtualMachine {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    runStrategy?: RunStrategy;
    /** Deprecated by KubeVirt in favour of `runStrategy`; older VMs still carry it. */
    running?: boolean;
    template?: {
      metadata?: ObjectMeta;
      spec?: { domain?: { devices?: VmDevices; [field: string]: unknown }; [field: string]: unknown };
    };
    [field: string]: unknown;
  };
  status?: {
    printableStatus?: string;
    ready?: boolean;
    created?: boolean;
    stateChangeRequests?: Array<{ action: 'Start' | 'Stop'; uid?: string }>;
    [field: string]: unknown;
  };
}

/** A `kubevirt.io/v1` VirtualMachineInstance. @category objects */
export interface VirtualMachineInstance {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { domain?: { devices?: VmDevices; [field: string]: unknown }; [field: string]: unknown };
  status?: {
    phase?: 'Pending' | 'Scheduling' | 'Scheduled' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    nodeName?: string;
    interfaces?: Array<{ name?: string; ipAddress?: string; ipAddresses?: string[] }>;
    [field: string]: unknown;
  };
}

/** A `clone.kubevirt.io` VirtualMachineClone, in `v1beta1` or `v1alpha1` (the same spec). @category objects */
export interface VirtualMachineClone {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    source: { apiGroup: string; kind: string; name: string };
    target?: { apiGroup: string; kind: string; name: string };
    labelFilters?: string[];
    annotationFilters?: string[];
    template?: { labelFilters?: string[]; annotationFilters?: string[] };
    patches?: string[];
    [field: string]: unknown;
  };
  status?: {
    phase?:
      | 'SnapshotInProgress'
      | 'RestoreInProgress'
      | 'CreatingTargetVM'
      | 'Succeeded'
      | 'Failed'
      | 'Unknown'
      | '';
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    targetName?: string;
    /** The VirtualMachineSnapshot of the source, once the clone made it. */
    snapshotName?: string | null;
    /** The VirtualMachineRestore that writes the target VM, once the clone made it. */
    restoreName?: string | null;
    [field: string]: unknown;
  };
}

/**
 * A KubeVirt VirtualMachineSnapshot (`snapshot.kubevirt.io`), as the SDK writes and reads it: the one snapshot of a
 * golden VM that a pool create or grow restores all its members from.
 *
 * @category objects
 */
export interface VirtualMachineSnapshot {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: { source: { apiGroup: string; kind: string; name: string }; [field: string]: unknown };
  status?: {
    phase?: 'InProgress' | 'Succeeded' | 'Failed' | 'Unknown' | '';
    readyToUse?: boolean;
    error?: { message?: string; time?: string };
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    [field: string]: unknown;
  };
}

/** A permitted host device entry of the KubeVirt CR. @category objects */
export interface PermittedHostDevice {
  resourceName: string;
  externalResourceProvider?: boolean;
  pciVendorSelector?: string;
  mdevNameSelector?: string;
  selectors?: unknown[];
}

/** The `permittedHostDevices` of the KubeVirt CR's configuration. @category objects */
export interface PermittedHostDevices {
  pciHostDevices?: PermittedHostDevice[];
  mediatedDevices?: PermittedHostDevice[];
  usb?: PermittedHostDevice[];
}
