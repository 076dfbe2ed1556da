import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { parseUsbDeviceId } from '../../../src/usb/device-id.js';

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('parseUsbDeviceId', () => {
  it.each([
    ['1050:0407', { kind: 'vendor-product', vendorId: '1050', productId: '0407', text: '1050:0407' }],
    ['076B:3031', { kind: 'vendor-product', vendorId: '076b', productId: '3031', text: '076b:3031' }],
    ['1-5', { kind: 'bus-device', bus: 1, device: 5, text: '1-5' }],
    ['02-03', { kind: 'bus-device', bus: 2, device: 3, text: '2-3' }],
    ['001-127', { kind: 'bus-device', bus: 1, device: 127, text: '1-127' }],
  ])('reads %j', (text, expected) => {
    expect(parseUsbDeviceId(text)).toEqual(expected);
  });

  it.each([
    ['', 'neither vendor:product nor bus-device'],
    ['1050', 'neither'],
    ['1050:407', 'neither'],
    ['1050:04070', 'neither'],
    ['g050:0407', 'neither'],
    [' 1050:0407', 'neither'],
    ['1-3.2', 'neither'],
    ['1-4:1.0', 'neither'],
    ['usb1', 'neither'],
    ['0-5', 'bus numbers start at 1'],
    ['1-0', 'device numbers run from 1 to 127'],
    ['1-128', 'device numbers run from 1 to 127'],
    ['1-4;reboot', 'neither'],
  ])('refuses %j with INVALID_INPUT saying %s', (text, why) => {
    const error = thrownBy(() => parseUsbDeviceId(text));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toContain(why);
    expect((error as Error).message).toContain('such as 1050:0407');
  });

  it('accepts every pair of four hex digits and writes it in lower case', () => {
    const hex4 = fc.stringMatching(/^[0-9a-fA-F]{4}$/);
    fc.assert(
      fc.property(hex4, hex4, (vendor, product) => {
        expect(parseUsbDeviceId(`${vendor}:${product}`).text).toBe(`${vendor}:${product}`.toLowerCase());
      }),
    );
  });

  it('gives back a bus-device ID that reads back to itself', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999 }), fc.integer({ min: 1, max: 127 }), (bus, device) => {
        const { text } = parseUsbDeviceId(`${bus}-${device}`);
        expect(text).toBe(`${bus}-${device}`);
        expect(parseUsbDeviceId(text).text).toBe(text);
      }),
    );
  });

  it('never lets through a string with anything but hex digits, a colon, decimal digits or a dash', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const error = thrownBy(() => parseUsbDeviceId(text));
        if (error === undefined) expect(text).toMatch(/^[0-9a-fA-F:-]+$/);
        else expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
      }),
    );
  });
});
