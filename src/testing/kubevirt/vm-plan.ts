import type { VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import type { VmKnobs } from './fault-knobs.js';
import { isFinal, runStrategyOf, type StateChangeRequest } from './run-strategy.js';

/** Everything the VM controller knows about one VM when it decides its next step. */
export interface VmFacts {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  knobs: VmKnobs;
  /** A clone is still restoring into this VM, so it may not start. */
  restoring: boolean;
  /** The node its VMI reports. */
  nodeName: string;
  /** The address its VMI reports; undefined when the simulator's range is exhausted. */
  ipAddress: string | undefined;
  /** Milliseconds since the epoch. */
  now: number;
  /** When a delayed start may create the VMI, once decided. */
  startDueAt: number | undefined;
  /** When a delayed stop may delete the VMI, once decided. */
  stopDueAt: number | undefined;
}

/** The one write the VM controller does next. */
export type VmStep =
  | { kind: 'create-vmi'; vmi: VirtualMachineInstance }
  | { kind: 'delete-vmi'; uid: string }
  | { kind: 'write-vmi-status'; status: Record<string, unknown> }
  | { kind: 'write-vm-status'; status: Record<string, unknown> }
  | { kind: 'none' };

/** A step plus the delay timers to keep and when to look again without an event. */
export interface VmPlan {
  step: VmStep;
  startDueAt: number | undefined;
  stopDueAt: number | undefined;
  wakeAt: number | undefined;
}

type Want = 'run' | 'stop' | 'keep';

const phaseOrder = ['Scheduling', 'Scheduled', 'Running'] as const;
type ProgressPhase = (typeof phaseOrder)[number];

/** The label KubeVirt puts on a VMI naming its VM. */
export const vmNameLabel = 'vm.kubevirt.io/name';

/** The VMI KubeVirt would create for a VM: its template, owned by the VM, with no status yet. */
export function buildVmi(vm: VirtualMachine): VirtualMachineInstance {
  const template = vm.spec.template ?? {};
  const name = vm.metadata.name ?? '';
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      name,
      namespace: vm.metadata.namespace ?? '',
      labels: { ...template.metadata?.labels, [vmNameLabel]: name },
      ...(template.metadata?.annotations ? { annotations: { ...template.metadata.annotations } } : {}),
      ownerReferences: [
        {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachine',
          name,
          uid: vm.metadata.uid ?? '',
          controller: true,
        },
      ],
    },
    spec: structuredClone(template.spec ?? { domain: { devices: {} } }),
  };
}

function firstInterface(vmi: VirtualMachineInstance): { name: string; mac: string | undefined } {
  const interfaces = vmi.spec?.domain?.devices?.interfaces;
  const first = Array.isArray(interfaces)
    ? (interfaces[0] as { name?: unknown; macAddress?: unknown } | undefined)
    : undefined;
  return {
    name: typeof first?.name === 'string' ? first.name : 'default',
    mac: typeof first?.macAddress === 'string' && first.macAddress !== '' ? first.macAddress : undefined,
  };
}

/** The status a VMI shows in a phase of its way to `Running`. */
export function vmiStatusFor(
  phase: ProgressPhase,
  vmi: VirtualMachineInstance,
  nodeName: string,
  ipAddress: string,
  now: number,
): Record<string, unknown> {
  if (phase === 'Scheduling') return { phase };
  if (phase === 'Scheduled') return { phase, nodeName };
  const iface = firstInterface(vmi);
  return {
    phase,
    nodeName,
    interfaces: [
      {
        name: iface.name,
        ipAddress,
        ipAddresses: [ipAddress],
        interfaceName: 'eth0',
        infoSource: 'domain, guest-agent',
        ...(iface.mac ? { mac: iface.mac } : {}),
      },
    ],
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(now).toISOString() }],
  };
}

function wantOf(facts: VmFacts, first: StateChangeRequest | undefined): Want {
  const { vm, vmi } = facts;
  if (vm.metadata.deletionTimestamp) return 'stop';
  if (first?.action === 'Stop') return 'stop';
  if (facts.restoring) return 'keep';
  switch (runStrategyOf(vm)) {
    case 'Halted':
      return 'stop';
    case 'Always':
      return 'run';
    case 'RerunOnFailure':
      return vmi?.status?.phase === 'Succeeded' ? 'keep' : 'run';
    case 'Once':
      return vmi !== undefined && isFinal(vmi) ? 'keep' : 'run';
    case 'Manual':
      return first?.action === 'Start' ? 'run' : 'keep';
  }
}

function progressStep(facts: VmFacts, vmi: VirtualMachineInstance): VmStep {
  const phase = vmi.status?.phase;
  const reached = phaseOrder.indexOf(phase as ProgressPhase);
  const goal = facts.knobs.neverReady ? 0 : facts.ipAddress === undefined ? 1 : 2;
  const ip = facts.ipAddress ?? '';
  if (reached < goal) {
    const next = phaseOrder[reached + 1] as ProgressPhase;
    return { kind: 'write-vmi-status', status: vmiStatusFor(next, vmi, facts.nodeName, ip, facts.now) };
  }
  if (phase === 'Running' && goal === 2) {
    const iface = vmi.status?.interfaces?.[0];
    if (vmi.status?.nodeName !== facts.nodeName || iface?.ipAddress !== ip) {
      return {
        kind: 'write-vmi-status',
        status: vmiStatusFor('Running', vmi, facts.nodeName, ip, facts.now),
      };
    }
  }
  return { kind: 'none' };
}

function printableStatusOf(facts: VmFacts, want: Want): string {
  const { vm, vmi } = facts;
  if (vm.metadata.deletionTimestamp) return 'Terminating';
  if (facts.restoring) return 'Provisioning';
  if (vmi !== undefined && !isFinal(vmi)) {
    if (want === 'stop') return 'Stopping';
    return vmi.status?.phase === 'Running' ? 'Running' : 'Starting';
  }
  return want === 'run' && vmi === undefined ? 'Starting' : 'Stopped';
}

function vmStatusChanges(
  facts: VmFacts,
  want: Want,
  remaining: StateChangeRequest[],
): Record<string, unknown> | undefined {
  const { vm, vmi } = facts;
  const printableStatus = printableStatusOf(facts, want);
  const ready = printableStatus === 'Running';
  const created = vmi !== undefined;
  const current = vm.status ?? {};
  const currentRequests = (current.stateChangeRequests ?? []) as StateChangeRequest[];
  const readyCondition = (current.conditions as Array<{ type?: string; status?: string }> | undefined)?.find(
    (condition) => condition.type === 'Ready',
  );
  const changes: Record<string, unknown> = {};
  if (current.printableStatus !== printableStatus || current.ready !== ready || current.created !== created) {
    Object.assign(changes, { printableStatus, ready, created });
  }
  if (readyCondition?.status !== (ready ? 'True' : 'False')) {
    changes.conditions = [
      {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        ...(ready ? {} : { reason: vmi === undefined ? 'VMINotExists' : 'GuestNotRunning' }),

        lastTransitionTime: new Date(facts.now).toISOString(),
      },
    ];
  }
  if (remaining.length !== currentRequests.length)
    changes.stateChangeRequests = remaining.length === 0 ? null : remaining;
  return Object.keys(changes).length === 0 ? undefined : changes;
}

/**
 * Decides the next step for a VM, like KubeVirt's VM controller: create the VMI when the run strategy (or a
 * pending start request) wants it running, walk it through `Scheduling → Scheduled → Running`, delete it when the
 * VM should stop, consume `status.stateChangeRequests`, and keep `printableStatus`, `ready` and `created` current.
 * One step per call; the caller runs it and asks again.
 */
export function planVm(facts: VmFacts): VmPlan {
  const { vm, vmi, knobs, now } = facts;
  const requests = (vm.status?.stateChangeRequests ?? []) as StateChangeRequest[];
  const first = requests[0];
  // A stop request for a VMI that is already gone (or was replaced) is done.
  if (
    first?.action === 'Stop' &&
    (vmi === undefined || (first.uid !== undefined && first.uid !== vmi.metadata.uid))
  ) {
    const status = { stateChangeRequests: requests.length > 1 ? requests.slice(1) : null };
    return {
      step: { kind: 'write-vm-status', status },
      startDueAt: undefined,
      stopDueAt: undefined,
      wakeAt: undefined,
    };
  }

  const want = wantOf(facts, first);
  let remaining = requests;
  let wakeAt: number | undefined;
  let startDueAt: number | undefined;
  let stopDueAt: number | undefined;
  let step: VmStep = { kind: 'none' };

  if (want === 'stop' && vmi !== undefined) {
    stopDueAt = facts.stopDueAt ?? now + (vm.metadata.deletionTimestamp ? 0 : knobs.stopDelayMs);
    if (isFinal(vmi) || now >= stopDueAt) step = { kind: 'delete-vmi', uid: vmi.metadata.uid ?? '' };
    else wakeAt = stopDueAt;
  } else if (want === 'run' && vmi !== undefined && isFinal(vmi)) {
    step = { kind: 'delete-vmi', uid: vmi.metadata.uid ?? '' };
  } else if (want === 'run' && vmi === undefined) {
    startDueAt = facts.startDueAt ?? now + knobs.startDelayMs;
    if (now >= startDueAt) {
      step = { kind: 'create-vmi', vmi: buildVmi(vm) };
      startDueAt = undefined;
    } else wakeAt = startDueAt;
  } else if (vmi !== undefined && !isFinal(vmi)) {
    if (want === 'run' && first?.action === 'Start') remaining = requests.slice(1);
    step = progressStep(facts, vmi);
  }

  if (step.kind === 'none') {
    const changes = vmStatusChanges(facts, want, remaining);
    if (changes) step = { kind: 'write-vm-status', status: changes };
  }
  return { step, startDueAt, stopDueAt, wakeAt: step.kind === 'none' ? wakeAt : undefined };
}
