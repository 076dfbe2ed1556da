import { describe, expect, it } from 'vitest';
import { claimLoopbackRange, IpPool } from '../../../src/testing/kubevirt/ip-pool.js';

// Other test runs on this machine may hold ranges too: the tests compare the ranges they claim, never fixed numbers.
describe('a loopback range for the addresses of one control plane', () => {
  it('is a /16 no other holder has until it is released, then it can be claimed again', async () => {
    const first = await claimLoopbackRange(undefined);
    const second = await claimLoopbackRange(undefined);
    try {
      expect(first.cidr).toMatch(/^127\.\d{1,3}\.0\.0\/16$/);
      expect(second.cidr).toMatch(/^127\.\d{1,3}\.0\.0\/16$/);
      expect(second.cidr).not.toBe(first.cidr);
      const handed = new IpPool(first.range).addressOf('ns/vm-1');
      expect(handed?.startsWith(first.cidr.replace(/0\.0\/16$/, ''))).toBe(true);
    } finally {
      await second.release();
    }
    await first.release();
    // the lowest free range is taken first, so the one just released comes back
    const again = await claimLoopbackRange(undefined);
    await again.release();
    expect(again.cidr).toBe(first.cidr);
  });

  it('takes a given range as it is, held or not, and refuses one outside 127.0.0.0/8', async () => {
    const held = await claimLoopbackRange(undefined);
    try {
      const given = await claimLoopbackRange(held.cidr);
      expect(given.range).toEqual(held.range);
      await given.release();
    } finally {
      await held.release();
    }
    await expect(claimLoopbackRange('10.0.0.0/16')).rejects.toMatchObject({
      name: 'VdiError',
      code: 'INVALID_INPUT',
    });
  });
});
