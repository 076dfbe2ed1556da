/**
 * What a person should know before a local USB device is attached to a desktop.
 *
 * @category usb
 */
export interface UsbSecurityNotice {
  /** One line to put above the points. */
  heading: string;
  /** One sentence per implication. */
  points: readonly string[];
}

/**
 * The security implications of redirecting a USB device into a VM, to show before it is attached: the device
 * is the guest's alone while attached, the VM cannot live-migrate meanwhile, and the guest sees everything the
 * device does.
 *
 * @example
 * ```ts
 * const { heading, points } = usbSecurityNotice();
 * console.log([heading, ...points.map((point) => `- ${point}`)].join('\n'));
 * ```
 * @category usb
 */
export function usbSecurityNotice(): UsbSecurityNotice {
  return {
    heading: 'Before you redirect a USB device to a desktop:',
    points: [
      'The device belongs to the guest alone while it is attached: programs on this machine cannot use it until ' +
        'the redirection ends.',
      'The VM cannot live-migrate while the device is attached, so a node drain waits for it or has to stop the VM.',
      'The guest sees everything the device does and can use it as you would: every touch of a security key, ' +
        'every certificate and PIN exchange of a smartcard. Redirect a device only to a desktop you trust.',
    ],
  };
}
