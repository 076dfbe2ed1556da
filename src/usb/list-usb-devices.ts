import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VdiError } from '../errors.js';
import {
  parseUsbDevice,
  type UsbDevice,
  type UsbDeviceAttributes,
  usbDeviceNamePattern,
} from './parse-usb-device.js';

/** Options of {@link listUsbDevices}. @category usb */
export interface ListUsbDevicesOptions {
  /** The folder to read. Default `/sys/bus/usb/devices`; tests point it at a fixture tree. */
  sysfsRoot?: string;
}

const attributeNames = [
  'idVendor',
  'idProduct',
  'manufacturer',
  'product',
  'serial',
  'busnum',
  'devnum',
  'bDeviceClass',
  'devpath',
] as const satisfies ReadonlyArray<keyof UsbDeviceAttributes>;

async function readAttribute(dir: string, name: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, name), 'utf8');
  } catch {
    // an absent file is an absent attribute, like a device without a serial number
    return undefined;
  }
}

/**
 * The USB devices attached to this machine, read from sysfs, ordered by bus and device number. Root hubs are
 * left out; other hubs are listed with `hub: true`.
 *
 * @example
 * ```ts
 * for (const device of await listUsbDevices()) {
 *   console.log(`${device.id}  ${device.busDevice}  ${device.manufacturer ?? ''} ${device.product ?? ''}`);
 * }
 * ```
 * @throws {@link VdiError} `USB_UNAVAILABLE` when the machine has no readable sysfs USB folder (not Linux, or a
 *   container without `/sys`); an empty list means sysfs is there and shows no devices.
 * @category usb
 */
export async function listUsbDevices(options: ListUsbDevicesOptions = {}): Promise<UsbDevice[]> {
  const root = options.sysfsRoot ?? '/sys/bus/usb/devices';
  let names: string[];
  try {
    names = await readdir(root);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new VdiError(
      'USB_UNAVAILABLE',
      `Cannot read the USB devices of this machine: ${root} is not readable (${code}). Listing and redirecting ` +
        'local USB devices needs Linux with sysfs mounted; run it on the machine the device is plugged into.',
      { cause: error, details: { sysfsRoot: root, code } },
    );
  }
  const devices: UsbDevice[] = [];
  for (const name of names.filter((entry) => usbDeviceNamePattern.test(entry))) {
    const dir = join(root, name);
    const values = await Promise.all(attributeNames.map((attribute) => readAttribute(dir, attribute)));
    const attributes: Partial<Record<(typeof attributeNames)[number], string>> = {};
    attributeNames.forEach((attribute, index) => {
      const value = values[index];
      if (value !== undefined) attributes[attribute] = value;
    });
    const device = parseUsbDevice(name, attributes);
    if (device) devices.push(device);
  }
  return devices.sort((a, b) => a.busnum - b.busnum || a.devnum - b.devnum);
}
