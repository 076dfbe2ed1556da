import { VdiError } from '../errors.js';
import type { NodeObject } from '../kube-objects.js';
import type { PermittedHostDevices, VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';
import {
  type DeviceKind,
  type DeviceNeed,
  readDeviceNeeds,
  type UncountedDevice,
  uncountedDevicesOf,
} from './device-needs.js';
import { parseDeviceCount } from './parse-quantity.js';

/**
 * What {@link admitPool} decides on: the golden VM, how many members need room, and the cluster as read.
 *
 * @category capacity
 */
export interface AdmitPoolInput {
  /** The VM the members are cloned from; its template's `gpus[]` and `hostDevices[]` are what each member needs. */
  golden: VirtualMachine;
  /** How many members must fit at once, each with its whole device set on one node. */
  size: number;
  /** The `permittedHostDevices` of the cluster's KubeVirt CR. */
  permittedHostDevices: PermittedHostDevices;
  nodes: readonly NodeObject[];
  /**
   * The VMIs of every namespace: the active ones hold devices on their nodes, and the active ones without a node
   * yet will take devices wherever they land.
   */
  vmis: readonly VirtualMachineInstance[];
}

/**
 * One line of the capacity table: one device resource on one node.
 *
 * @category capacity
 */
export interface CapacityRow {
  node: string;
  resource: string;
  kind: DeviceKind;
  /** The node's `status.allocatable` of the resource (0 when it advertises none). */
  allocatable: number;
  /** Units that active VMIs on the node ask for. */
  inUse: number;
  /** `allocatable - inUse`, never below 0. */
  free: number;
  /** Units one member needs. */
  perMember: number;
  /** How many members the node can host, all of their devices counted; the same on every row of the node. */
  hostsMembers: number;
  /** Why the node hosts nothing regardless of its devices, if it does not. */
  excluded?: 'unschedulable' | 'node-selector';
}

/**
 * Active VMIs that ask for a resource the members need but have no node yet (`Pending`, `Scheduling`), as
 * {@link admitPool} counts them.
 *
 * @category capacity
 */
export interface UnscheduledDemand {
  /** The VMIs, as `namespace/name`. */
  vmis: string[];
  /** Members' room they take at most, wherever they land; already taken off `fits`. */
  members: number;
}

/**
 * The answer of {@link admitPool}.
 *
 * - `admit`: `size` members fit. `fits` is how many would, absent when the VM needs no device at all.
 * - `reject`: they do not; `shortfall` members are missing, `reason` says whether a device is not permitted at
 *   all or the free units are too few, and `message` explains it with the per-node numbers.
 *
 * Both carry the per-node `table`, the member's `needs`, the `unscheduled` VMIs that will take devices on some
 * node, and `uncounted`: devices that admission cannot see (no `deviceName`, such as dynamic-resource-allocation
 * claims, and SR-IOV interfaces), each with the reason.
 *
 * @category capacity
 */
export type AdmissionPlan =
  | {
      kind: 'admit';
      size: number;
      needs: DeviceNeed[];
      uncounted: UncountedDevice[];
      table: CapacityRow[];
      unscheduled?: UnscheduledDemand;
      fits?: number;
    }
  | {
      kind: 'reject';
      reason: 'not-permitted' | 'insufficient';
      size: number;
      needs: DeviceNeed[];
      uncounted: UncountedDevice[];
      table: CapacityRow[];
      unscheduled: UnscheduledDemand;
      fits: number;
      shortfall: number;
      message: string;
    };

const finishedPhases = new Set(['Succeeded', 'Failed']);

interface Usage {
  /** Units of each resource that the active VMIs on each node ask for. */
  byNode: Map<string, Map<string, number>>;
  /** Units of each resource that each active VMI without a node asks for. */
  unscheduled: Array<{ vmi: string; units: Map<string, number> }>;
}

function unitsOf(vmi: VirtualMachineInstance): Map<string, number> {
  const units = new Map<string, number>();
  const devices = vmi.spec?.domain?.devices;
  for (const entry of [...(devices?.gpus ?? []), ...(devices?.hostDevices ?? [])]) {
    if (typeof entry.deviceName !== 'string' || entry.deviceName === '') continue;
    units.set(entry.deviceName, (units.get(entry.deviceName) ?? 0) + 1);
  }
  return units;
}

function usageOf(vmis: readonly VirtualMachineInstance[]): Usage {
  const usage: Usage = { byNode: new Map(), unscheduled: [] };
  for (const vmi of vmis) {
    if (finishedPhases.has(vmi.status?.phase ?? '')) continue;
    const units = unitsOf(vmi);
    const node = vmi.status?.nodeName;
    if (!node) {
      usage.unscheduled.push({ vmi: `${vmi.metadata.namespace ?? ''}/${vmi.metadata.name ?? ''}`, units });
      continue;
    }
    const onNode = usage.byNode.get(node) ?? new Map<string, number>();
    for (const [resource, count] of units) onNode.set(resource, (onNode.get(resource) ?? 0) + count);
    usage.byNode.set(node, onNode);
  }
  return usage;
}

/**
 * Members' room the VMIs without a node take at most. Landing on one node, a VMI holding `u` units of a
 * resource lowers that node's count by at most `ceil(u / perMember)`, and by the largest of these over the
 * resources a member needs; the sum over the VMIs is a bound wherever they land.
 */
function unscheduledDemandOf(needs: DeviceNeed[], usage: Usage): UnscheduledDemand {
  const demand: UnscheduledDemand = { vmis: [], members: 0 };
  for (const { vmi, units } of usage.unscheduled) {
    const displaced = Math.max(
      0,
      ...needs.map((need) => Math.ceil((units.get(need.resource) ?? 0) / need.perMember)),
    );
    if (displaced === 0) continue;
    demand.vmis.push(vmi);
    demand.members += displaced;
  }
  return demand;
}

function nodeSelectorOf(golden: VirtualMachine): Record<string, string> {
  const selector = golden.spec.template?.spec?.nodeSelector;
  if (typeof selector !== 'object' || selector === null) return {};
  return Object.fromEntries(
    Object.entries(selector).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function exclusionOf(node: NodeObject, selector: Record<string, string>): CapacityRow['excluded'] {
  if (node.spec?.unschedulable === true) return 'unschedulable';
  const labels = node.metadata.labels ?? {};
  if (Object.entries(selector).some(([key, value]) => labels[key] !== value)) return 'node-selector';
  return undefined;
}

/** Builds the table: every node (by name) times every needed resource. */
function tableFor(
  needs: DeviceNeed[],
  nodes: readonly NodeObject[],
  usage: Usage,
  golden: VirtualMachine,
): CapacityRow[] {
  const selector = nodeSelectorOf(golden);
  const named = nodes
    .filter((node) => typeof node.metadata.name === 'string' && node.metadata.name !== '')
    .sort((left, right) => ((left.metadata.name ?? '') < (right.metadata.name ?? '') ? -1 : 1));
  const rows: CapacityRow[] = [];
  for (const node of named) {
    const name = node.metadata.name ?? '';
    const excluded = exclusionOf(node, selector);
    const nodeRows = needs.map((need) => {
      const allocatable = parseDeviceCount(node.status?.allocatable?.[need.resource]);
      const inUse = usage.byNode.get(name)?.get(need.resource) ?? 0;
      return { need, allocatable, inUse, free: Math.max(0, allocatable - inUse) };
    });
    // a member needs every resource on this one node, so the scarcest resource bounds the node
    const hostsMembers =
      excluded !== undefined || needs.some((need) => need.kind === 'not-permitted')
        ? 0
        : Math.min(...nodeRows.map((row) => Math.floor(row.free / row.need.perMember)));
    for (const row of nodeRows) {
      rows.push({
        node: name,
        resource: row.need.resource,
        kind: row.need.kind,
        allocatable: row.allocatable,
        inUse: row.inUse,
        free: row.free,
        perMember: row.need.perMember,
        hostsMembers,
        ...(excluded === undefined ? {} : { excluded }),
      });
    }
  }
  return rows;
}

/** Members the nodes can host: each node's count, added up (before the VMIs without a node take their room). */
function nodeFitsOf(table: CapacityRow[]): number {
  const byNode = new Map<string, number>();
  for (const row of table) byNode.set(row.node, row.hostsMembers);
  let total = 0;
  for (const hosts of byNode.values()) total += hosts;
  return total;
}

function describeNeeds(needs: DeviceNeed[]): string {
  return needs.map((need) => `${need.perMember} × ${need.resource} (${need.kind})`).join(' and ');
}

function goldenNameOf(golden: VirtualMachine): string {
  return golden.metadata.name ?? '(unnamed)';
}

function notPermittedMessage(golden: VirtualMachine, missing: DeviceNeed[]): string {
  const list = missing.map((need) => `"${need.resource}" (${need.requestedBy.join(', ')})`).join(', ');
  return (
    `device admission failed: golden VM "${goldenNameOf(golden)}" asks for ${list}, which the KubeVirt CR does not ` +
    'permit, so no node can run a clone of it. Permit each resource in spec.configuration.permittedHostDevices ' +
    'of the KubeVirt CR: under pciHostDevices for PCI passthrough or mediatedDevices for vGPU (with its ' +
    'resourceName, and externalResourceProvider: true when a device plugin other than KubeVirt advertises it), ' +
    'then try again.'
  );
}

const listedNodeLimit = 20;

interface Shortage {
  size: number;
  needs: DeviceNeed[];
  table: CapacityRow[];
  usage: Usage;
  unscheduled: UnscheduledDemand;
  nodeFits: number;
  fits: number;
}

const listedVmiLimit = 5;

function insufficientMessage(golden: VirtualMachine, shortage: Shortage): string {
  const { size, needs, table, usage, unscheduled, nodeFits, fits } = shortage;
  const lines = [
    `insufficient device capacity for "${goldenNameOf(golden)}": each member cloned from it needs ` +
      `${describeNeeds(needs)} on one node; the nodes can host ${fits} of ${size} member${size === 1 ? '' : 's'} ` +
      `now, ${size - fits} short.`,
  ];
  const shortTotals = needs.flatMap((need) => {
    const rows = table.filter((row) => row.resource === need.resource && row.excluded === undefined);
    const free = rows.reduce((sum, row) => sum + row.free, 0);
    const waiting = usage.unscheduled.reduce((sum, { units }) => sum + (units.get(need.resource) ?? 0), 0);
    const wanted = size * need.perMember;
    if (free - waiting >= wanted) return [];
    const held = waiting > 0 ? `, ${waiting} asked for by VMIs waiting for a node` : '';
    return [`${need.resource}: ${free} free on nodes that can take members${held}, ${wanted} needed`];
  });
  if (shortTotals.length > 0) lines.push(`Too few free units in total: ${shortTotals.join('; ')}.`);
  else if (nodeFits < size) {
    lines.push(
      'The free units add up to enough, but they are spread over nodes so that only this many members find ' +
        'all of their devices on one node (a VM cannot span nodes).',
    );
  }
  if (unscheduled.members > 0) {
    const shown = unscheduled.vmis.slice(0, listedVmiLimit).join(', ');
    const more =
      unscheduled.vmis.length > listedVmiLimit ? ` and ${unscheduled.vmis.length - listedVmiLimit} more` : '';
    lines.push(
      `VMIs waiting for a node (${shown}${more}) ask for these devices too and will take room for up to ` +
        `${unscheduled.members} member${unscheduled.members === 1 ? '' : 's'} wherever they land.`,
    );
  }
  const nodes = [...new Set(table.map((row) => row.node))];
  const withDevices = nodes.filter((node) => table.some((row) => row.node === node && row.allocatable > 0));
  for (const node of withDevices.slice(0, listedNodeLimit)) {
    const rows = table.filter((row) => row.node === node);
    const excluded = rows[0]?.excluded;
    const counts = rows
      .map((row) => `${row.resource} ${row.allocatable} allocatable, ${row.inUse} in use, ${row.free} free`)
      .join('; ');
    lines.push(
      `  ${node}${excluded ? ` (${excluded})` : ''}: ${counts} → hosts ${rows[0]?.hostsMembers ?? 0}`,
    );
  }
  if (withDevices.length > listedNodeLimit)
    lines.push(`  … and ${withDevices.length - listedNodeLimit} more nodes with devices.`);
  const without = nodes.length - withDevices.length;
  if (without > 0)
    lines.push(
      `  ${without} other node${without === 1 ? '' : 's'} advertise${without === 1 ? 's' : ''} none of these devices.`,
    );
  lines.push(
    'Free units by stopping VMs that hold them, add nodes with these devices, or ask for fewer members.',
  );
  return lines.join('\n');
}

/**
 * Decides whether `size` members cloned from `golden` fit on the cluster's devices at once.
 *
 * Each node's free units are its allocatable minus what the active VMIs on it (phase other than `Succeeded` or
 * `Failed`) ask for. A member needs its whole device set on one node, so a node hosts
 * `min over resources of floor(free / perMember)` members, and the nodes host the sum. Members are identical,
 * so no other arrangement fits more: the count is exact for one device type and for several.
 *
 * Active VMIs without a node yet (`Pending`, `Scheduling`) will take their devices on some node, not known
 * which, so they count against the cluster as a whole: each takes off the room it could cost a member on the
 * node it lands on, the worst case (`max over resources of ceil(units / perMember)`, one member per unit for a
 * member that needs one unit). Admission may then refuse a pool that would have fitted, never the other way.
 * Unschedulable nodes and nodes that the golden VM's `nodeSelector` rules out host nothing. A VM that asks for
 * no device is admitted without looking at the nodes.
 *
 * @example
 * ```ts
 * const plan = admitPool({ golden, size: 3, permittedHostDevices, nodes, vmis });
 * if (plan.kind === 'reject') console.log(plan.message);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `size` is not a whole number of at least 0.
 * @category capacity
 */
export function admitPool(input: AdmitPoolInput): AdmissionPlan {
  const { golden, size, permittedHostDevices, nodes, vmis } = input;
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pool size ${size} is not valid; pass a whole number of at least 0.`,
      {
        details: { size },
      },
    );
  }
  const needs = readDeviceNeeds(golden, permittedHostDevices);
  const uncounted = uncountedDevicesOf(golden);
  if (needs.length === 0) return { kind: 'admit', size, needs, uncounted, table: [] };

  const usage = usageOf(vmis);
  const table = tableFor(needs, nodes, usage, golden);
  const unscheduled = unscheduledDemandOf(needs, usage);
  const nodeFits = nodeFitsOf(table);
  const fits = Math.max(0, nodeFits - unscheduled.members);
  if (size === 0 || fits >= size) return { kind: 'admit', size, needs, uncounted, table, unscheduled, fits };

  const missing = needs.filter((need) => need.kind === 'not-permitted');
  const rejected = {
    kind: 'reject',
    size,
    needs,
    uncounted,
    table,
    unscheduled,
    fits,
    shortfall: size - fits,
  } as const;
  if (missing.length > 0)
    return { ...rejected, reason: 'not-permitted', message: notPermittedMessage(golden, missing) };
  return {
    ...rejected,
    reason: 'insufficient',
    message: insufficientMessage(golden, { size, needs, table, usage, unscheduled, nodeFits, fits }),
  };
}
