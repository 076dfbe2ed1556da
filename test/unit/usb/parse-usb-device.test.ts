import { describe, expect, it } from 'vitest';
import { parseUsbDevice, type UsbDeviceAttributes } from '../../../src/usb/parse-usb-device.js';

const yubikey: UsbDeviceAttributes = {
  idVendor: '1050\n',
  idProduct: '0407\n',
  manufacturer: 'Yubico\n',
  product: 'YubiKey OTP+FIDO+CCID\n',
  busnum: '1\n',
  devnum: '5\n',
  bDeviceClass: '00\n',
  devpath: '4\n',
};

describe('parseUsbDevice', () => {
  it('reads the IDs, names and numbers of a device', () => {
    expect(parseUsbDevice('1-4', yubikey)).toEqual({
      sysfsName: '1-4',
      vendorId: '1050',
      productId: '0407',
      manufacturer: 'Yubico',
      product: 'YubiKey OTP+FIDO+CCID',
      busnum: 1,
      devnum: 5,
      id: '1050:0407',
      busDevice: '1-5',
      hub: false,
    });
  });

  it('keeps the serial number when there is one and writes the IDs in lower case', () => {
    const device = parseUsbDevice('1-3.2', { ...yubikey, idVendor: '076B\n', serial: 'OKCM0070508140855\n' });
    expect(device?.serial).toBe('OKCM0070508140855');
    expect(device?.id).toBe('076b:0407');
  });

  it.each<[string, string, UsbDeviceAttributes]>([
    [
      'a root hub named usbN',
      'usb1',
      { ...yubikey, idVendor: '1d6b\n', bDeviceClass: '09\n', devpath: '0\n' },
    ],
    [
      'a hub at device path 0 under another name',
      '3-0',
      { ...yubikey, bDeviceClass: '09\n', devpath: '0\n' },
    ],
    ['an interface', '1-4:1.0', { bInterfaceClass: '03\n' } as UsbDeviceAttributes],
    ['a device without a vendor ID', '1-4', { ...yubikey, idVendor: undefined }],
    ['a device with an empty product ID', '1-4', { ...yubikey, idProduct: '\n' }],
    ['a device with a vendor ID that is not four hex digits', '1-4', { ...yubikey, idVendor: 'yubi\n' }],
    ['a device without a device number', '1-4', { ...yubikey, devnum: undefined }],
    ['a device with a bus number that is not a number', '1-4', { ...yubikey, busnum: 'one\n' }],
    ['an entry whose name is no device name', 'power', yubikey],
  ])('leaves out %s', (_case, name, attributes) => {
    expect(parseUsbDevice(name, attributes)).toBeUndefined();
  });

  it('lists a hub that is not a root hub, marked as a hub', () => {
    expect(parseUsbDevice('1-3', { ...yubikey, bDeviceClass: '09\n', devpath: '3\n' })?.hub).toBe(true);
  });
});
