/**
 * A USB device attached to this machine, as sysfs describes it.
 *
 * @category usb
 */
export interface UsbDevice {
  /** The sysfs name: bus and port path, such as `1-4` or `1-3.2`. It is not a device ID. */
  sysfsName: string;
  /** Four lower-case hex digits (`idVendor`). */
  vendorId: string;
  /** Four lower-case hex digits (`idProduct`). */
  productId: string;
  /** The manufacturer's name as the device reports it, when it does. */
  manufacturer?: string;
  /** The product's name as the device reports it, when it does. */
  product?: string;
  /** The serial number, when the device has one. */
  serial?: string;
  /** The bus number (`busnum`). */
  busnum: number;
  /** The device number on that bus (`devnum`); it changes when the device is plugged in again. */
  devnum: number;
  /** `vendorId:productId`, a device ID for redirection. */
  id: string;
  /** `busnum-devnum`, a device ID for redirection that tells two devices of the same model apart. */
  busDevice: string;
  /** Whether the device is a hub (device class 09). */
  hub: boolean;
}

/** The sysfs attribute files {@link parseUsbDevice} reads; a file that is absent is `undefined`. @category usb */
export type UsbDeviceAttributes = Readonly<
  Partial<
    Record<
      | 'idVendor'
      | 'idProduct'
      | 'manufacturer'
      | 'product'
      | 'serial'
      | 'busnum'
      | 'devnum'
      | 'bDeviceClass'
      | 'devpath',
      string
    >
  >
>;

/** The sysfs names of devices: root hubs (`usb1`) and ports (`1-4`, `1-3.2`); interfaces (`1-4:1.0`) are not. */
export const usbDeviceNamePattern = /^(usb\d+|\d+-\d+(\.\d+)*)$/;

const hexIdPattern = /^[0-9a-fA-F]{4}$/;
const numberPattern = /^\d+$/;

/**
 * Reads one entry of `/sys/bus/usb/devices` from its attribute files, or `undefined` when it is a root hub (named
 * `usbN`, or a hub at device path 0), not a device at all (an interface), or lacks the IDs and numbers.
 *
 * @example
 * ```ts
 * parseUsbDevice('1-4', { idVendor: '1050\n', idProduct: '0407\n', busnum: '1\n', devnum: '5\n' })?.id; // '1050:0407'
 * parseUsbDevice('usb1', { idVendor: '1d6b\n', idProduct: '0002\n', busnum: '1\n', devnum: '1\n' }); // undefined
 * ```
 * @category usb
 */
export function parseUsbDevice(sysfsName: string, attributes: UsbDeviceAttributes): UsbDevice | undefined {
  if (!usbDeviceNamePattern.test(sysfsName) || sysfsName.startsWith('usb')) return undefined;
  const value = (key: keyof UsbDeviceAttributes) => {
    const text = attributes[key]?.trim();
    return text === '' ? undefined : text;
  };
  const hub = value('bDeviceClass') === '09';
  if (hub && value('devpath') === '0') return undefined;
  const vendorId = value('idVendor')?.toLowerCase();
  const productId = value('idProduct')?.toLowerCase();
  const busnumText = value('busnum');
  const devnumText = value('devnum');
  if (!vendorId || !productId || !hexIdPattern.test(vendorId) || !hexIdPattern.test(productId))
    return undefined;
  if (!busnumText || !devnumText || !numberPattern.test(busnumText) || !numberPattern.test(devnumText))
    return undefined;
  const busnum = Number(busnumText);
  const devnum = Number(devnumText);
  const manufacturer = value('manufacturer');
  const product = value('product');
  const serial = value('serial');
  return {
    sysfsName,
    vendorId,
    productId,
    ...(manufacturer ? { manufacturer } : {}),
    ...(product ? { product } : {}),
    ...(serial ? { serial } : {}),
    busnum,
    devnum,
    id: `${vendorId}:${productId}`,
    busDevice: `${busnum}-${devnum}`,
    hub,
  };
}
