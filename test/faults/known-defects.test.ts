import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/kubevirt-types.js';
import { toVmMemberFacts } from '../../src/vm/vm-member-facts.js';

// Defects the fault storms found outside src/kube/ and src/sessions/, reported to their owners. Each case
// passes while the defect is there; once it is fixed the case fails: then drop it, and its allowance in
// support/fault-run.ts.
describe('defects the fault storms found, fixed elsewhere', () => {
  it.fails('counts a VM asked to stop whose status still says Running as stopping, so a claim starts it', () => {
    const vm: VirtualMachine = {
      metadata: { name: 'alpha-2', namespace: 'faults', labels: { 'corral.dev/vdi-pool': 'alpha' } },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
      status: { printableStatus: 'Running' },
    };
    const vmi = {
      metadata: { name: 'alpha-2', namespace: 'faults' },
      status: { phase: 'Running' },
    } as VirtualMachineInstance;
    expect(toVmMemberFacts(vm, vmi).power).not.toBe('running');
  });
});
