import type { PermittedHostDevices, VirtualMachine, VmDevices } from '../kubevirt-types.js';

/**
 * How the KubeVirt CR's `permittedHostDevices` lets a VM use a device resource:
 *
 * - `pci-passthrough`: a `pciHostDevices` entry; one physical device belongs to one running VM.
 * - `mediated`: a `mediatedDevices` entry (vGPU, GVT-g); a card is cut into slots of one profile, and the node
 *   advertises each slot as one allocatable unit.
 * - `external-provider`: an entry of either list with `externalResourceProvider: true`; a device plugin other
 *   than KubeVirt's (such as NVIDIA's or an SR-IOV one) advertises the units.
 * - `usb`: a `usb` entry.
 * - `not-permitted`: no entry names the resource, so KubeVirt refuses to start a VM that asks for it.
 *
 * In every permitted case the node's `status.allocatable` carries the count of units.
 *
 * @category capacity
 */
export type DeviceKind = 'pci-passthrough' | 'mediated' | 'external-provider' | 'usb' | 'not-permitted';

/**
 * What one member needs of one device resource.
 *
 * @category capacity
 */
export interface DeviceNeed {
  /** The extended resource name, the `deviceName` of the VM's device entries. */
  resource: string;
  /** How many units one member asks for. */
  perMember: number;
  kind: DeviceKind;
  /** The device entries asking for it, as `gpus/<name>` or `hostDevices/<name>`. */
  requestedBy: string[];
}

/**
 * Classifies a device resource through the KubeVirt CR's `permittedHostDevices`.
 *
 * @example
 * ```ts
 * classifyDevice('nvidia.com/GRID_A10-4Q', { mediatedDevices: [{ resourceName: 'nvidia.com/GRID_A10-4Q' }] });
 * // 'mediated'
 * ```
 * @category capacity
 */
export function classifyDevice(resource: string, permitted: PermittedHostDevices): DeviceKind {
  const lists = [
    ['pci-passthrough', permitted.pciHostDevices],
    ['mediated', permitted.mediatedDevices],
    ['usb', permitted.usb],
  ] as const;
  for (const [kind, entries] of lists) {
    const entry = entries?.find((candidate) => candidate.resourceName === resource);
    if (entry) return entry.externalResourceProvider === true ? 'external-provider' : kind;
  }
  return 'not-permitted';
}

/** Every GPU and host device entry of a VM's template (where KubeVirt reads what its VMI asks for). */
function deviceEntriesOf(vm: VirtualMachine): Array<{ ref: string; deviceName: string | undefined }> {
  const devices: VmDevices | undefined = vm.spec.template?.spec?.domain?.devices;
  const lists = [
    ['gpus', devices?.gpus],
    ['hostDevices', devices?.hostDevices],
  ] as const;
  return lists.flatMap(([list, entries]) =>
    (entries ?? []).map((entry) => ({
      ref: `${list}/${entry.name}`,
      deviceName:
        typeof entry.deviceName === 'string' && entry.deviceName !== '' ? entry.deviceName : undefined,
    })),
  );
}

/**
 * Reads what one member cloned from `golden` asks for: its `gpus[]` and `hostDevices[]`, grouped by
 * `deviceName` and classified. Entries without a `deviceName` (for example GPUs requested through a
 * dynamic-resource-allocation claim) are not counted here; {@link uncountedDevicesOf} names them.
 *
 * @returns the needs sorted by resource name; empty when the VM asks for no device.
 * @example
 * ```ts
 * readDeviceNeeds(golden, permitted);
 * // [{ resource: 'nvidia.com/GA102GL_A10', perMember: 1, kind: 'pci-passthrough', requestedBy: ['gpus/gpu1'] }]
 * ```
 * @category capacity
 */
export function readDeviceNeeds(golden: VirtualMachine, permitted: PermittedHostDevices): DeviceNeed[] {
  const byResource = new Map<string, string[]>();
  for (const { ref, deviceName } of deviceEntriesOf(golden)) {
    if (deviceName === undefined) continue;
    byResource.set(deviceName, [...(byResource.get(deviceName) ?? []), ref]);
  }
  return [...byResource.entries()]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([resource, requestedBy]) => ({
      resource,
      perMember: requestedBy.length,
      kind: classifyDevice(resource, permitted),
      requestedBy,
    }));
}

/**
 * A device of a member that admission cannot count, and why.
 *
 * @category capacity
 */
export interface UncountedDevice {
  /** The device entry, as `gpus/<name>`, `hostDevices/<name>` or `interfaces/<name>`. */
  entry: string;
  /** Why it is not counted. */
  reason: string;
}

const draReason =
  'it names no deviceName (a device given through a resource claim, dynamic resource allocation), and node ' +
  'allocatable does not show such devices';

// KubeVirt asks for an SR-IOV interface's resource by the annotation of its network's NetworkAttachmentDefinition.
const nadResourceAnnotation = 'k8s.v1.cni.cncf.io/resourceName';

function recordsOf(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value)
    ? value.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null)
    : [];
}

function sriovReason(network: Record<string, unknown> | undefined): string {
  const multus = network?.multus as { networkName?: unknown } | undefined;
  const attachment = typeof multus?.networkName === 'string' ? multus.networkName : undefined;
  if (attachment === undefined) {
    return (
      'it is an SR-IOV interface without a Multus network of its name, so no NetworkAttachmentDefinition says ' +
      'which device resource it takes'
    );
  }
  return (
    `it is an SR-IOV interface on NetworkAttachmentDefinition "${attachment}": the device resource it takes is ` +
    `named by that object's ${nadResourceAnnotation} annotation, not by the VM, and admission does not read it`
  );
}

/** The SR-IOV interfaces of a VM's template, each with the network it names. */
function sriovInterfacesOf(vm: VirtualMachine): UncountedDevice[] {
  const spec = vm.spec.template?.spec;
  const networks = recordsOf(spec?.networks);
  return recordsOf(spec?.domain?.devices?.interfaces)
    .filter((entry) => entry.sriov !== undefined)
    .map((entry) => ({
      entry: `interfaces/${String(entry.name)}`,
      reason: sriovReason(networks.find((network) => network.name === entry.name)),
    }));
}

/**
 * The devices of `golden` that admission cannot count: GPU and host device entries without a `deviceName`
 * (such as a dynamic-resource-allocation claim), which node allocatable does not show, and SR-IOV interfaces,
 * whose device resource is named by their network's NetworkAttachmentDefinition rather than by the VM.
 *
 * @example
 * ```ts
 * uncountedDevicesOf(golden);
 * // [{ entry: 'interfaces/fast-net', reason: 'it is an SR-IOV interface on NetworkAttachmentDefinition …' }]
 * ```
 * @category capacity
 */
export function uncountedDevicesOf(golden: VirtualMachine): UncountedDevice[] {
  return [
    ...deviceEntriesOf(golden)
      .filter((entry) => entry.deviceName === undefined)
      .map((entry) => ({ entry: entry.ref, reason: draReason })),
    ...sriovInterfacesOf(golden),
  ];
}
