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
 * The device entries of `golden` that name no `deviceName`, such as GPUs requested through a
 * dynamic-resource-allocation claim. Node allocatable does not show such devices, so admission cannot count them.
 *
 * @returns entries as `gpus/<name>` or `hostDevices/<name>`.
 * @category capacity
 */
export function uncountedDevicesOf(golden: VirtualMachine): string[] {
  return deviceEntriesOf(golden)
    .filter((entry) => entry.deviceName === undefined)
    .map((entry) => entry.ref);
}
