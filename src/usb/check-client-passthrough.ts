import { VdiError } from '../errors.js';
import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';

/**
 * Checks that a running VM accepts redirected USB devices. KubeVirt accepts them only when the VM sets
 * `spec.template.spec.domain.devices.clientPassthrough`, and a running instance only when it was started so.
 *
 * @example
 * ```ts
 * checkClientPassthrough(vm, vmi, 'vm/corral-vms/devpool-1');
 * ```
 * @throws {@link VdiError} `UNSUPPORTED_BACKEND` when the VM lacks it (the message says what to add) or was
 *   started before it was added (the message says to restart it).
 * @category usb
 */
export function checkClientPassthrough(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance,
  desktopId: string,
): void {
  const inTemplate = vm.spec.template?.spec?.domain?.devices?.clientPassthrough !== undefined;
  const runningDevices = vmi.spec?.domain?.devices;
  // the running instance decides when it shows its devices; the template only takes effect at the next start
  const accepts = runningDevices === undefined ? inTemplate : runningDevices.clientPassthrough !== undefined;
  if (accepts) return;
  if (inTemplate) {
    throw new VdiError(
      'UNSUPPORTED_BACKEND',
      `${desktopId} has clientPassthrough in its VirtualMachine, but the running instance was started without it; ` +
        'restart the desktop, then redirect the device.',
      {
        details: { desktop: desktopId, missing: 'spec.domain.devices.clientPassthrough of the running VMI' },
      },
    );
  }
  throw new VdiError(
    'UNSUPPORTED_BACKEND',
    `${desktopId} does not accept USB redirection: add \`clientPassthrough: {}\` under ` +
      'spec.template.spec.domain.devices of its VirtualMachine (or of the golden VM, for new pools), then restart it.',
    { details: { desktop: desktopId, missing: 'spec.template.spec.domain.devices.clientPassthrough' } },
  );
}
