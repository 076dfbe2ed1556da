import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance, VmDevices } from '../../../src/kubevirt-types.js';
import { checkVmUsbSupport } from '../../../src/vm/vm-usb-support.js';

const desktopId = 'vm/corral-vms/devpool-1';
const vm = (devices: VmDevices): VirtualMachine => ({
  metadata: { name: 'devpool-1' },
  spec: { template: { spec: { domain: { devices } } } },
});
const vmi = (devices?: VmDevices): VirtualMachineInstance => ({
  metadata: { name: 'devpool-1' },
  ...(devices ? { spec: { domain: { devices } } } : {}),
});

function outcome(template: VmDevices, running: VirtualMachineInstance | undefined): string {
  const support = checkVmUsbSupport(vm(template), running, desktopId);
  if (support.kind === 'supported') return 'supported';
  return support.reason.includes('restart the desktop') ? 'restart' : 'add';
}

describe('checkVmUsbSupport', () => {
  it.each<[string, VmDevices, VirtualMachineInstance | undefined, string]>([
    [
      'the VM and its instance have it',
      { clientPassthrough: {} },
      vmi({ clientPassthrough: {} }),
      'supported',
    ],
    ['the VM has it and the instance shows no devices', { clientPassthrough: {} }, vmi(), 'supported'],
    ['the VM has it and does not run', { clientPassthrough: {} }, undefined, 'supported'],
    ['the instance still has it after it left the template', {}, vmi({ clientPassthrough: {} }), 'supported'],
    ['neither has it', {}, vmi({}), 'add'],
    ['the VM lacks it and does not run', {}, undefined, 'add'],
    ['the VM got it after the instance started', { clientPassthrough: {} }, vmi({}), 'restart'],
  ])('when %s: %s', (_case, template, running, expected) => {
    expect(outcome(template, running)).toBe(expected);
  });

  it('says exactly what to add and where, and names the missing field in the details', () => {
    const support = checkVmUsbSupport(vm({}), vmi({}), desktopId);
    expect(support).toEqual({
      kind: 'unsupported',
      reason: expect.stringContaining('add `clientPassthrough: {}` under spec.template.spec.domain.devices'),
      details: { desktop: desktopId, missing: 'spec.template.spec.domain.devices.clientPassthrough' },
    });
  });
});
