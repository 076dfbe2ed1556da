import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import type { VirtualMachine, VirtualMachineInstance, VmDevices } from '../../../src/kubevirt-types.js';
import { checkClientPassthrough } from '../../../src/usb/check-client-passthrough.js';

const desktopId = 'vm/corral-vms/devpool-1';
const vm = (devices: VmDevices): VirtualMachine => ({
  metadata: { name: 'devpool-1' },
  spec: { template: { spec: { domain: { devices } } } },
});
const vmi = (devices?: VmDevices): VirtualMachineInstance => ({
  metadata: { name: 'devpool-1' },
  ...(devices ? { spec: { domain: { devices } } } : {}),
});

function outcome(template: VmDevices, running: VmDevices | undefined): string {
  try {
    checkClientPassthrough(vm(template), vmi(running), desktopId);
    return 'accepted';
  } catch (error) {
    if (!isVdiError(error, 'UNSUPPORTED_BACKEND')) throw error;
    return error.message.includes('restart the desktop') ? 'restart' : 'add';
  }
}

describe('checkClientPassthrough', () => {
  it.each<[string, VmDevices, VmDevices | undefined, string]>([
    ['the VM and its instance have it', { clientPassthrough: {} }, { clientPassthrough: {} }, 'accepted'],
    ['the VM has it and the instance shows no devices', { clientPassthrough: {} }, undefined, 'accepted'],
    ['the instance still has it after it left the template', {}, { clientPassthrough: {} }, 'accepted'],
    ['neither has it', {}, {}, 'add'],
    ['the VM lacks it and the instance shows no devices', {}, undefined, 'add'],
    ['the VM got it after the instance started', { clientPassthrough: {} }, {}, 'restart'],
  ])('when %s: %s', (_case, template, running, expected) => {
    expect(outcome(template, running)).toBe(expected);
  });

  it('says exactly what to add and where', () => {
    expect(() => checkClientPassthrough(vm({}), vmi({}), desktopId)).toThrow(
      'add `clientPassthrough: {}` under spec.template.spec.domain.devices',
    );
  });
});
