import type { UsbSupport } from '../desktop-backend.js';
import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';

/**
 * Whether a VM takes redirected USB devices. KubeVirt accepts them only when the VM sets
 * `spec.template.spec.domain.devices.clientPassthrough`, and a running instance only when it was started so.
 * Pure; the reason of `unsupported` says what to add, or to restart.
 *
 * @example
 * ```ts
 * checkVmUsbSupport(vm, vmi, 'vm/corral-vms/devpool-1'); // { kind: 'supported' }
 * ```
 */
export function checkVmUsbSupport(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
  desktopId: string,
): UsbSupport {
  const inTemplate = vm.spec.template?.spec?.domain?.devices?.clientPassthrough !== undefined;
  const runningDevices = vmi?.spec?.domain?.devices;
  // the running instance decides when it shows its devices; the template only takes effect at the next start
  const accepts = runningDevices === undefined ? inTemplate : runningDevices.clientPassthrough !== undefined;
  if (accepts) return { kind: 'supported' };
  if (inTemplate) {
    return {
      kind: 'unsupported',
      reason:
        `${desktopId} has clientPassthrough in its VirtualMachine, but the running instance was started without it; ` +
        'restart the desktop, then redirect the device.',
      details: { desktop: desktopId, missing: 'spec.domain.devices.clientPassthrough of the running VMI' },
    };
  }
  return {
    kind: 'unsupported',
    reason:
      `${desktopId} does not accept USB redirection: add \`clientPassthrough: {}\` under ` +
      'spec.template.spec.domain.devices of its VirtualMachine (or of the golden VM, for new pools), then restart it.',
    details: { desktop: desktopId, missing: 'spec.template.spec.domain.devices.clientPassthrough' },
  };
}
