import type { MemberConsole, MemberDevice, MemberFacts, MemberPower } from '../desktop-backend.js';
import { formatDesktopId } from '../ids.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  ephemeralLabel,
  poolLabel,
  releasedSessionAnnotation,
  sessionIdAnnotation,
  sourceAnnotation,
} from '../keys.js';
import type { VirtualMachine, VirtualMachineInstance, VmDevices } from '../kubevirt-types.js';

const finishedPhases = new Set(['Succeeded', 'Failed']);
const startingStatuses = new Set(['Starting', 'WaitingForVolumeBinding', 'Migrating']);
const stoppingStatuses = new Set(['Stopping', 'Terminating']);
const failedStatuses = new Set(['CrashLoopBackOff', 'DataVolumeError', 'Unschedulable']);

/** Whether a VM asks to run: its run field (`Always`, `RerunOnFailure`, `running: true`) or a start request. */
export function asksToRun(vm: VirtualMachine): boolean {
  const { running, runStrategy } = vm.spec;
  const wanted = running === true || runStrategy === 'Always' || runStrategy === 'RerunOnFailure';
  return wanted || (vm.status?.stateChangeRequests?.some((request) => request.action === 'Start') ?? false);
}

/** Whether a VM's run field asks it to stop: `runStrategy: Halted`, or the deprecated `running: false`. */
export function asksToStop(vm: VirtualMachine): boolean {
  const { running, runStrategy } = vm.spec;
  return runStrategy === 'Halted' || (runStrategy === undefined && running === false);
}

/**
 * The power of a VM in the backend-neutral words, from KubeVirt's `printableStatus` and what the VM asks for.
 * A `Stopped` VM that asks to run (a start just accepted) is `starting`, so it is never taken for free; a
 * running or starting VM that asks to stop (a stop KubeVirt has not shown yet) is `stopping`, so a claim starts it.
 */
export function powerOfVm(vm: VirtualMachine): MemberPower {
  const status = vm.status?.printableStatus ?? '';
  if ((status === 'Running' || startingStatuses.has(status)) && asksToStop(vm)) return 'stopping';
  if (status === 'Running') return 'running';
  if (status === 'Stopped') return asksToRun(vm) ? 'starting' : 'stopped';
  if (status === 'Provisioning') return 'provisioning';
  if (startingStatuses.has(status)) return 'starting';
  if (stoppingStatuses.has(status)) return 'stopping';
  if (status.startsWith('Err') || failedStatuses.has(status)) return 'failed';
  return 'unknown';
}

function consolesOf(devices: VmDevices | undefined): MemberConsole[] {
  return [
    ...(devices?.autoattachGraphicsDevice === false ? [] : ['vnc' as const]),
    ...(devices?.autoattachSerialConsole === false ? [] : ['serial' as const]),
  ];
}

function devicesOf(devices: VmDevices | undefined): MemberDevice[] {
  return [
    ...(devices?.gpus ?? []).map(({ name, deviceName }) => ({
      kind: 'gpu' as const,
      name,
      resource: deviceName,
    })),
    ...(devices?.hostDevices ?? []).map(({ name, deviceName }) => ({
      kind: 'host-device' as const,
      name,
      resource: deviceName,
    })),
  ];
}

/**
 * Turns a member VM and its VMI (when there is one) into the plain {@link MemberFacts} services see. Pure.
 * A VM asked to run whose instance already runs is `running`, though its `phase` may still say `Starting`.
 * The running instance's devices are what a console or a device can reach; the template's only count once it
 * starts again, so they are read only while there is no live instance.
 *
 * @example
 * ```ts
 * const facts = toVmMemberFacts(await cluster.getVm(ns, 'devpool-1'), await cluster.getVmi(ns, 'devpool-1'));
 * ```
 */
export function toVmMemberFacts(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): MemberFacts {
  const namespace = vm.metadata.namespace ?? '';
  const member = vm.metadata.name ?? '';
  const labels = vm.metadata.labels ?? {};
  const annotations = vm.metadata.annotations ?? {};
  const finished = vmi !== undefined && finishedPhases.has(vmi.status?.phase ?? '');
  const live = vmi !== undefined && !finished;
  const asked = powerOfVm(vm);
  // KubeVirt copies the instance's phase into the VM's printableStatus a moment later: the instance leads, both ways
  const instanceRuns = vmi?.status?.phase === 'Running';
  const power =
    asked === 'starting' && instanceRuns
      ? 'running'
      : asked === 'running' && !instanceRuns
        ? 'stopping'
        : asked;
  const devices = (live ? vmi.spec?.domain?.devices : undefined) ?? vm.spec.template?.spec?.domain?.devices;
  return {
    kind: 'vm',
    namespace,
    member,
    pool: labels[poolLabel] ?? '',
    desktopId: formatDesktopId({ kind: 'vm', namespace, member }),
    uid: vm.metadata.uid ?? '',
    resourceVersion: vm.metadata.resourceVersion ?? '',
    deleting: vm.metadata.deletionTimestamp !== undefined,
    power,
    phase: vm.status?.printableStatus ?? 'Unknown',
    address: live ? vmi.status?.interfaces?.[0]?.ipAddress : undefined,
    node: live ? vmi.status?.nodeName : undefined,
    consoles: consolesOf(devices),
    devices: devicesOf(devices),
    ephemeral: labels[ephemeralLabel] === 'true',
    source: annotations[sourceAnnotation],
    presentation: {
      holder: annotations[assignedToKey],
      label: labels[assignedToKey],
      claimedAt: annotations[claimedAtAnnotation],
      sessionId: annotations[sessionIdAnnotation],
      releasedSession: annotations[releasedSessionAnnotation],
    },
    // a VM asked to stop whose instance lives is going down, whatever status KubeVirt has written yet
    previousInstance: finished || (live && (asked === 'stopped' || asked === 'stopping' || asksToStop(vm))),
    usesLegacyRunField: typeof vm.spec.running === 'boolean' && vm.spec.runStrategy === undefined,
  };
}
