import type { RunStrategy, VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import type { VmKnobs } from './fault-knobs.js';

/** A `status.stateChangeRequests` entry of a VM. */
export interface StateChangeRequest {
  action: 'Start' | 'Stop';
  uid?: string;
}

/** The run strategy KubeVirt derives: `spec.runStrategy`, else the deprecated `spec.running`, else `Halted`. */
export function runStrategyOf(vm: VirtualMachine): RunStrategy {
  if (vm.spec.runStrategy !== undefined) return vm.spec.runStrategy;
  return vm.spec.running === true ? 'Always' : 'Halted';
}

/** Whether a VMI has finished (its guest shut down or crashed). */
export function isFinal(vmi: VirtualMachineInstance): boolean {
  return vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';
}

/** What virt-api does for one start, stop or restart call. */
export type SubresourcePlan =
  | { kind: 'patch-spec'; spec: { runStrategy: RunStrategy } | { running: boolean } }
  | { kind: 'patch-requests'; stateChangeRequests: StateChangeRequest[] }
  | { kind: 'refuse'; status: number; message: string };

/** The VM subresources the simulator serves. */
export type VmAction = 'start' | 'stop' | 'restart';

function conflict(message: string): SubresourcePlan {
  return { kind: 'refuse', status: 409, message };
}

function setRunning(vm: VirtualMachine, running: boolean): SubresourcePlan {
  if (vm.spec.runStrategy !== undefined)
    return { kind: 'patch-spec', spec: { runStrategy: running ? 'Always' : 'Halted' } };
  return { kind: 'patch-spec', spec: { running } };
}

// virt-api appends to an empty list, lets a lone stop replace what is pending, and refuses anything else.
function addRequests(vm: VirtualMachine, changes: StateChangeRequest[]): SubresourcePlan {
  const pending = (vm.status?.stateChangeRequests ?? []) as StateChangeRequest[];
  if (pending.length === 0 || (changes.length === 1 && changes[0]?.action === 'Stop')) {
    return { kind: 'patch-requests', stateChangeRequests: changes };
  }
  return { kind: 'refuse', status: 500, message: 'unable to complete request: stop/start already underway' };
}

/**
 * Decides a start, stop or restart the way KubeVirt's virt-api does, from the VM, its VMI (if any) and the VM's
 * fault knobs. One simplification: stopping a `RerunOnFailure` VM sets `runStrategy: Halted`, as for `Always`.
 */
export function planSubresource(
  action: VmAction,
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
  knobs: VmKnobs,
): SubresourcePlan {
  const strategy = runStrategyOf(vm);
  const active = vmi !== undefined && !isFinal(vmi);
  if (action === 'start') {
    if (knobs.failStart) return { kind: 'refuse', ...knobs.failStart };
    const phase = vmi?.status?.phase;
    if (active && phase !== undefined && phase !== 'Unknown' && (phase as string) !== '') {
      return conflict('VM is already running');
    }
    switch (strategy) {
      case 'Halted':
        return setRunning(vm, true);
      case 'Manual':
      case 'RerunOnFailure':
        if (strategy === 'RerunOnFailure' && vmi?.status?.phase === 'Failed') {
          return conflict('RerunOnFailure does not support starting VM from failed state');
        }
        if (vmi !== undefined && isFinal(vmi)) {
          return addRequests(vm, [
            { action: 'Stop', ...(vmi.metadata.uid ? { uid: vmi.metadata.uid } : {}) },
            { action: 'Start' },
          ]);
        }
        return addRequests(vm, [{ action: 'Start' }]);
      case 'Always':
      case 'Once':
        return conflict(`${strategy} does not support manual start requests`);
    }
  }
  if (action === 'stop') {
    if (knobs.failStop) return { kind: 'refuse', ...knobs.failStop };
    switch (strategy) {
      case 'Halted':
        return conflict(
          active
            ? 'Halted only supports manual stop requests with a shorter graceperiod'
            : 'VM is not running',
        );
      case 'Manual':
        if (!active) return conflict('VM is not running');
        return addRequests(vm, [{ action: 'Stop', ...(vmi.metadata.uid ? { uid: vmi.metadata.uid } : {}) }]);
      case 'RerunOnFailure':
      case 'Always':
      case 'Once':
        return setRunning(vm, false);
    }
  }
  if (strategy === 'Halted' || strategy === 'Once') {
    return conflict(`RunStrategy ${strategy} does not support manual restart requests`);
  }
  if (vmi === undefined) return conflict('VM is not running');
  return addRequests(vm, [
    { action: 'Stop', ...(vmi.metadata.uid ? { uid: vmi.metadata.uid } : {}) },
    { action: 'Start' },
  ]);
}

/** What KubeVirt's admission does with a write of a VM: let it through, or refuse it with a status and message. */
export type VmAdmission = { allowed: true } | { allowed: false; status: number; message: string };

/**
 * Decides a VM create or update as KubeVirt's validating webhook would for a start written as the run field: a
 * write that makes a VM ask to run when it did not (or a create that asks to run) is refused with the VM's
 * `fail-start` knob, as the start subresource would refuse it; every other write is let through.
 */
export function planVmAdmission(
  before: VirtualMachine | undefined,
  after: VirtualMachine,
  knobs: VmKnobs,
): VmAdmission {
  const startsIt = runStrategyOf(after) === 'Always' && (!before || runStrategyOf(before) !== 'Always');
  if (!startsIt || !knobs.failStart) return { allowed: true };
  return { allowed: false, ...knobs.failStart };
}
