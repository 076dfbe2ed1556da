import { VdiError } from '../errors.js';

/**
 * A USB device as `virtctl usbredir` names it: by vendor and product ID, or by bus and device number.
 *
 * @category usb
 */
export type UsbDeviceId =
  | {
      /** Named by vendor and product ID. */
      kind: 'vendor-product';
      /** Four lower-case hex digits. */
      vendorId: string;
      /** Four lower-case hex digits. */
      productId: string;
      /** `vvvv:pppp`, lower case. */
      text: string;
    }
  | {
      /** Named by bus and device number. */
      kind: 'bus-device';
      /** The bus number. */
      bus: number;
      /** The device number on that bus. */
      device: number;
      /** `<bus>-<device>` without leading zeros. */
      text: string;
    };

const vendorProductPattern = /^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$/;
const busDevicePattern = /^(\d{1,3})-(\d{1,3})$/;

function malformed(text: string, why: string): VdiError {
  return new VdiError(
    'INVALID_INPUT',
    `"${text}" is not a USB device ID: ${why}. Name the device as vendor:product in hex, such as 1050:0407, or as ` +
      'bus-device in decimal, such as 1-5 for what lsusb shows as "Bus 001 Device 005"; listUsbDevices() lists both.',
    { details: { device: text } },
  );
}

/**
 * Checks and normalises a USB device ID: `vvvv:pppp` (four hex digits each, as lsusb prints them) or
 * `bus-device` (the bus number and the device number, decimal). A sysfs port name such as `1-4.2` is not a
 * device number and is refused.
 *
 * @example
 * ```ts
 * parseUsbDeviceId('1050:0407'); // { kind: 'vendor-product', vendorId: '1050', productId: '0407', text: '1050:0407' }
 * parseUsbDeviceId('001-005').text; // '1-5'
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `text` is neither form, or a number is out of range (a bus
 *   number is at least 1, a device number 1 to 127).
 * @category usb
 */
export function parseUsbDeviceId(text: string): UsbDeviceId {
  const vendorProduct = vendorProductPattern.exec(text);
  if (vendorProduct) {
    const vendorId = (vendorProduct[1] ?? '').toLowerCase();
    const productId = (vendorProduct[2] ?? '').toLowerCase();
    return { kind: 'vendor-product', vendorId, productId, text: `${vendorId}:${productId}` };
  }
  const busDevice = busDevicePattern.exec(text);
  if (busDevice) {
    const bus = Number(busDevice[1]);
    const device = Number(busDevice[2]);
    if (bus < 1) throw malformed(text, 'bus numbers start at 1');
    if (device < 1 || device > 127) throw malformed(text, 'device numbers run from 1 to 127');
    return { kind: 'bus-device', bus, device, text: `${bus}-${device}` };
  }
  throw malformed(text, 'it is neither vendor:product nor bus-device');
}
