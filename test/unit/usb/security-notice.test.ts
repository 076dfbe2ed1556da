import { describe, expect, it } from 'vitest';
import { usbSecurityNotice } from '../../../src/usb/security-notice.js';

describe('usbSecurityNotice', () => {
  it('names the three implications: exclusivity, no live migration, and what the guest sees', () => {
    const { heading, points } = usbSecurityNotice();
    expect(heading).not.toBe('');
    expect(points).toHaveLength(3);
    expect(points[0]).toMatch(/belongs to the guest alone while it is attached/);
    expect(points[1]).toMatch(/cannot live-migrate while the device is attached/);
    expect(points[2]).toMatch(/guest sees everything the device does/);
  });
});
