/**
 * The admission rules of KubeVirt v1.9.0's virt-api that a desktop pool can run into, as plain functions: an object
 * in, KubeVirt's refusal out (or nothing when it admits the object). The webhook in `admission-webhook.ts` serves
 * them; `docs/simulator.md` lists them.
 */

/** The `type` of a `StatusCause`, as apimachinery names them. */
export type AdmissionCauseType =
  | 'FieldValueInvalid'
  | 'FieldValueRequired'
  | 'FieldValueNotSupported'
  | 'FieldValueDuplicate';

/** One reason of a refusal: a `StatusCause` of the refusal's `details`. */
export interface AdmissionCause {
  type: AdmissionCauseType;
  message: string;
  field: string;
}

/** What virt-api answers for an object it refuses: 422 `Invalid`, its causes, and their messages joined. */
export interface AdmissionRefusal {
  code: 422;
  reason: 'Invalid';
  message: string;
  causes: AdmissionCause[];
}

// virt-api reports the first ten causes and counts the rest
const reportedCauses = 10;

/** Builds virt-api's refusal from its causes, or nothing when there are none. */
export function refusalOf(causes: readonly AdmissionCause[]): AdmissionRefusal | undefined {
  if (causes.length === 0) return undefined;
  const reported = causes.slice(0, reportedCauses);
  const more = causes.length - reported.length;
  const joined = reported.map((cause) => cause.message).join(', ');
  return {
    code: 422,
    reason: 'Invalid',
    message: more > 0 ? `${joined}, and ${more} more validation errors` : joined,
    causes: reported,
  };
}

type Json = Record<string, unknown>;

function objectAt(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function listAt(value: unknown): Json[] {
  return Array.isArray(value) ? value.map((item) => objectAt(item) ?? {}) : [];
}

function nameOf(item: Json): string {
  return typeof item.name === 'string' ? item.name : '';
}

function cause(type: AdmissionCauseType, message: string, field: string): AdmissionCause {
  return { type, message, field };
}

// labels only KubeVirt's own service accounts may put on a VMI, and so on a VM's template
const reservedTemplateLabels = new Set([
  'kubevirt.io/created-by',
  'kubevirt.io/migrationJobUID',
  'kubevirt.io/nodeName',
  'kubevirt.io/migrationTargetNodeName',
  'kubevirt.io/schedulable',
  'kubevirt.io/install-strategy',
]);

const volumeSources = [
  'persistentVolumeClaim',
  'sysprep',
  'cloudInitNoCloud',
  'cloudInitConfigDrive',
  'containerDisk',
  'ephemeral',
  'emptyDisk',
  'hostDisk',
  'dataVolume',
  'configMap',
  'secret',
  'downwardAPI',
  'serviceAccount',
  'downwardMetrics',
  'memoryDump',
  'containerPath',
];

const diskTargets = ['disk', 'lun', 'cdrom'];

const runStrategies = new Set(['Halted', 'Manual', 'Always', 'RerunOnFailure', 'Once']);

function countSet(item: Json, keys: readonly string[]): number {
  return keys.filter((key) => item[key] !== undefined && item[key] !== null).length;
}

// virt-api validates the template after defaulting it; of its defaults, only a disk for each volume without one
// bears on the rules here
function disksAfterDefaults(disks: Json[], volumes: Json[], filesystems: Json[]): Json[] {
  const named = new Set([...disks, ...filesystems].map(nameOf));
  return [
    ...disks,
    ...volumes.filter((volume) => !named.has(nameOf(volume))).map((volume) => ({ name: nameOf(volume) })),
  ];
}

function networkCauses(path: string, networks: Json[], interfaces: Json[]): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  if (networks.filter((network) => network.pod !== undefined).length > 1)
    causes.push(
      cause(
        'FieldValueDuplicate',
        `more than one interface is connected to a pod network in ${path}.interfaces`,
        `${path}.interfaces`,
      ),
    );
  networks.forEach((network, index) => {
    const types = countSet(network, ['pod', 'multus', 'resourceClaim']);
    if (types !== 1)
      causes.push(
        cause(
          'FieldValueRequired',
          types === 0 ? 'should have a network type' : 'should have only one network type',
          `${path}.networks[${index}]`,
        ),
      );
  });
  const seenNetworks = new Set<string>();
  networks.forEach((network, index) => {
    const name = nameOf(network);
    if (seenNetworks.has(name))
      causes.push(
        cause(
          'FieldValueDuplicate',
          `Network with name "${name}" already exists, every network must have a unique name`,
          `${path}.networks[${index}].name`,
        ),
      );
    seenNetworks.add(name);
  });
  const interfaceNames = new Set(interfaces.map(nameOf));
  networks.forEach((network, index) => {
    const field = `${path}.networks[${index}].name`;
    if (!interfaceNames.has(nameOf(network)))
      causes.push(cause('FieldValueRequired', `${field} '${nameOf(network)}' not found.`, field));
  });
  const seenInterfaces = new Set<string>();
  interfaces.forEach((iface, index) => {
    const name = nameOf(iface);
    if (seenInterfaces.has(name))
      causes.push(
        cause(
          'FieldValueDuplicate',
          'Only one interface can be connected to one specific network',
          `${path}.domain.devices.interfaces[${index}].name`,
        ),
      );
    seenInterfaces.add(name);
  });
  interfaces.forEach((iface, index) => {
    const field = `${path}.domain.devices.interfaces[${index}].name`;
    if (!seenNetworks.has(nameOf(iface)))
      causes.push(cause('FieldValueInvalid', `${field} '${nameOf(iface)}' not found.`, field));
  });
  return causes;
}

function diskCauses(path: string, disks: Json[], volumes: Json[]): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  const volumeNames = new Set(volumes.map(nameOf));
  // an empty CD-ROM without a volume is refused only while a feature gate is off; the simulator has none
  disks.forEach((disk, index) => {
    if (!volumeNames.has(nameOf(disk)) && disk.cdrom === undefined)
      causes.push(
        cause(
          'FieldValueInvalid',
          `${path}.domain.devices.disks[${index}].Name '${nameOf(disk)}' not found.`,
          `${path}.domain.devices.disks[${index}].name`,
        ),
      );
  });
  const disksPath = `${path}.domain.devices.disks`;
  disks.forEach((disk, index) => {
    const earlier = disks.findIndex((other) => nameOf(other) === nameOf(disk));
    if (earlier < index)
      causes.push(
        cause(
          'FieldValueInvalid',
          `${disksPath}[${index}] and ${disksPath}[${earlier}] must not have the same Name.`,
          `${disksPath}[${index}].name`,
        ),
      );
    if (countSet(disk, diskTargets) > 1)
      causes.push(
        cause(
          'FieldValueInvalid',
          `${disksPath}[${index}] can only have a single target type defined`,
          `${disksPath}[${index}]`,
        ),
      );
  });
  return causes;
}

function volumeCauses(path: string, volumes: Json[]): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  const volumesPath = `${path}.volumes`;
  const firstIndex = new Map<string, number>();
  volumes.forEach((volume, index) => {
    const earlier = firstIndex.get(nameOf(volume));
    if (earlier === undefined) firstIndex.set(nameOf(volume), index);
    else
      causes.push(
        cause(
          'FieldValueInvalid',
          `${volumesPath}[${index}] and ${volumesPath}[${earlier}] must not have the same Name.`,
          `${volumesPath}[${index}].name`,
        ),
      );
    if (countSet(volume, volumeSources) !== 1)
      causes.push(
        cause(
          'FieldValueInvalid',
          `${volumesPath}[${index}] must have exactly one source type set`,
          `${volumesPath}[${index}]`,
        ),
      );
  });
  return causes;
}

function runStrategyCauses(spec: Json): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  const { running, runStrategy } = spec;
  const hasRunning = running !== undefined && running !== null;
  const hasStrategy = runStrategy !== undefined && runStrategy !== null;
  if (hasRunning && hasStrategy)
    causes.push(
      cause(
        'FieldValueInvalid',
        'Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead',
        'spec.running',
      ),
    );
  if (!hasRunning && !hasStrategy)
    causes.push(cause('FieldValueInvalid', 'RunStrategy must be specified', 'spec.running'));
  if (!hasStrategy) return causes;
  const strategy = String(runStrategy);
  if (strategy === 'WaitAsReceiver')
    causes.push(
      cause(
        'FieldValueInvalid',
        'Invalid RunStrategy (WaitAsReceiver), DecentralizedLiveMigration feature gate is not enabled in kubevirt resource',
        'spec.runStrategy',
      ),
    );
  else if (!runStrategies.has(strategy))
    causes.push(cause('FieldValueInvalid', `Invalid RunStrategy (${strategy})`, 'spec.runStrategy'));
  return causes;
}

/**
 * Admits a VirtualMachine write (create or update) as virt-api's `virtualmachine-validator.kubevirt.io` does, for
 * the rules a pool's VMs can meet: the run fields, reserved `kubevirt.io/` labels on the template, interfaces and
 * networks that pair up, disks and volumes that pair up with unique names and one source or target each. A VM
 * being deleted is always admitted.
 *
 * @example
 * ```ts
 * admitVirtualMachine({ metadata: {}, spec: { running: false, runStrategy: 'Halted', template: { spec: {} } } });
 * // { code: 422, reason: 'Invalid', message: 'Running and RunStrategy are mutually exclusive. …', causes: [ … ] }
 * ```
 */
export function admitVirtualMachine(vm: unknown): AdmissionRefusal | undefined {
  const object = objectAt(vm) ?? {};
  if (objectAt(object.metadata)?.deletionTimestamp) return undefined;
  const spec = objectAt(object.spec) ?? {};
  const template = objectAt(spec.template);
  if (!template)
    return refusalOf([cause('FieldValueRequired', 'missing virtual machine template.', 'spec.template')]);
  const causes: AdmissionCause[] = [];
  const labels = objectAt(objectAt(template.metadata)?.labels) ?? {};
  if (Object.keys(labels).some((key) => reservedTemplateLabels.has(key)))
    causes.push(
      cause(
        'FieldValueNotSupported',
        'creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited',
        'spec.template.metadata.labels',
      ),
    );
  const path = 'spec.template.spec';
  const vmiSpec = objectAt(template.spec) ?? {};
  const devices = objectAt(objectAt(vmiSpec.domain)?.devices) ?? {};
  const volumes = listAt(vmiSpec.volumes);
  const disks = disksAfterDefaults(listAt(devices.disks), volumes, listAt(devices.filesystems));
  causes.push(
    ...networkCauses(path, listAt(vmiSpec.networks), listAt(devices.interfaces)),
    ...diskCauses(path, disks, volumes),
    ...volumeCauses(path, volumes),
    ...runStrategyCauses(spec),
  );
  return refusalOf(causes);
}

function filterCauses(filters: unknown, field: string): AdmissionCause[] {
  if (!Array.isArray(filters)) return [];
  const causes: AdmissionCause[] = [];
  for (const filter of filters.map(String)) {
    if (filter.length === 1) {
      if (filter === '!')
        causes.push(cause('FieldValueInvalid', 'a negation character is not a valid filter', field));
      continue;
    }
    const invalid = (what: string, char: string, rule: string) =>
      causes.push(
        cause(
          'FieldValueInvalid',
          `${field} filter ${filter} is invalid: cannot contain a ${what} character (${char}); FilterRules: ${rule}`,
          field,
        ),
      );
    if (filter.slice(1).includes('!'))
      invalid('negation', '!', 'NegationChar can be only used at the beginning of the filter');
    if (filter.slice(0, -1).includes('*'))
      invalid('wildcard', '*', 'WildcardChar can be only at the end of the filter');
  }
  return causes;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

// six bytes in one of the three notations Go's net.ParseMAC reads (KubeVirt refuses its longer addresses)
const macAddresses = [
  /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/i,
  /^[0-9a-f]{2}(?:-[0-9a-f]{2}){5}$/i,
  /^[0-9a-f]{4}(?:\.[0-9a-f]{4}){2}$/i,
];

function isJson(value: string): boolean {
  try {
    JSON.parse(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Admits a VirtualMachineClone write (either served version) as virt-api's `vm-clone-validator.kubevirt.io` does:
 * the label and annotation filters' syntax, a source that is a `VirtualMachine` or `VirtualMachineSnapshot` with an
 * API group and a name, a target that is a `VirtualMachine` named unlike its source VM, well-formed
 * `newMacAddresses`, and patches that are JSON.
 *
 * @example
 * ```ts
 * admitVirtualMachineClone({ spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' },
 *   target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' } } });
 * // message: 'Target name cannot be equal to source name when both are VirtualMachines'
 * ```
 */
export function admitVirtualMachineClone(clone: unknown): AdmissionRefusal | undefined {
  const spec = objectAt(objectAt(clone)?.spec) ?? {};
  const template = objectAt(spec.template) ?? {};
  const source = objectAt(spec.source);
  const target = objectAt(spec.target);
  const causes: AdmissionCause[] = [
    ...filterCauses(spec.annotationFilters, 'spec.annotations'),
    ...filterCauses(spec.labelFilters, 'spec.labels'),
    ...filterCauses(template.annotationFilters, 'spec.template.annotations'),
    ...filterCauses(template.labelFilters, 'spec.template.labels'),
  ];
  const sourceKind = text(source?.kind);
  // KubeVirt reads the source kind before checking there is a source; its schema refuses a clone without one first
  if (source && sourceKind !== 'VirtualMachine' && sourceKind !== 'VirtualMachineSnapshot')
    causes.push(cause('FieldValueInvalid', 'Source kind is not supported', 'spec.Source.Kind'));
  if (target && text(target.kind) !== 'VirtualMachine')
    causes.push(cause('FieldValueInvalid', 'Target kind is not supported', 'spec.Target.Kind'));
  if (!source) {
    causes.push(cause('FieldValueInvalid', 'Source cannot be nil', 'spec.Source'));
  } else {
    if (text(source.apiGroup) === '')
      causes.push(cause('FieldValueInvalid', "Source's APIGroup cannot be empty", 'spec.Source.APIGroup'));
    if (sourceKind === '')
      causes.push(cause('FieldValueInvalid', "Source's Kind cannot be empty", 'spec.Source'));
    if (text(source.name) === '')
      causes.push(cause('FieldValueInvalid', "Source's name cannot be empty", 'spec.Source.Name'));
  }
  if (
    source &&
    target &&
    sourceKind === 'VirtualMachine' &&
    text(target.kind) === 'VirtualMachine' &&
    text(target.name) === text(source.name)
  )
    causes.push(
      cause(
        'FieldValueInvalid',
        'Target name cannot be equal to source name when both are VirtualMachines',
        'spec.target.name',
      ),
    );
  for (const [iface, mac] of Object.entries(objectAt(spec.newMacAddresses) ?? {})) {
    const address = text(mac);
    if (address !== '' && !macAddresses.some((form) => form.test(address)))
      causes.push(
        cause(
          'FieldValueInvalid',
          `interface ${iface} has malformed MAC address (${address}).`,
          `spec.newMacAddresses.${iface}`,
        ),
      );
  }
  (Array.isArray(spec.patches) ? spec.patches.map(String) : []).forEach((patch, index) => {
    if (!isJson(patch))
      causes.push(cause('FieldValueInvalid', `patch is not valid JSON (${patch})`, `spec.patches[${index}]`));
  });
  return refusalOf(causes);
}
