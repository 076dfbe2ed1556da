import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { listUsbDevices } from '../../../src/usb/list-usb-devices.js';

const fixtures = join(import.meta.dirname, '../../fixtures/sysfs');

describe('listUsbDevices', () => {
  it('lists the devices of the workstation tree by bus and device number, without root hubs or interfaces', async () => {
    const devices = await listUsbDevices({ sysfsRoot: join(fixtures, 'workstation') });
    expect(devices).toEqual([
      {
        sysfsName: '1-3',
        vendorId: '05e3',
        productId: '0610',
        manufacturer: 'GenesysLogic',
        product: 'USB2.1 Hub',
        busnum: 1,
        devnum: 3,
        id: '05e3:0610',
        busDevice: '1-3',
        hub: true,
      },
      {
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
      },
      {
        sysfsName: '1-3.2',
        vendorId: '076b',
        productId: '3031',
        manufacturer: 'HID Global',
        product: 'OMNIKEY 3x21 Smart Card Reader',
        serial: 'OKCM0070508140855',
        busnum: 1,
        devnum: 6,
        id: '076b:3031',
        busDevice: '1-6',
        hub: false,
      },
    ]);
  });

  it('gives an empty list for a machine with only root hubs', async () => {
    expect(await listUsbDevices({ sysfsRoot: join(fixtures, 'root-hubs-only') })).toEqual([]);
  });

  it('says USB is unavailable, rather than listing nothing, when the sysfs folder is missing', async () => {
    const sysfsRoot = join(fixtures, 'no-such-machine');
    const error = await listUsbDevices({ sysfsRoot }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'USB_UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toContain('(ENOENT)');
    expect((error as Error).message).toContain('needs Linux with sysfs mounted');
  });

  it('says USB is unavailable when the sysfs root is a file', async () => {
    const error = await listUsbDevices({ sysfsRoot: join(fixtures, 'README.md') }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'USB_UNAVAILABLE')).toBe(true);
  });
});
