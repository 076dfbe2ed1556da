import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimLoopbackRange, type LoopbackRange } from '../../../src/testing/kubevirt/ip-pool.js';
import { parseRdpGuestKnob, startRdpServer } from '../../../src/testing/rdp-guest.js';

const run = promisify(execFile);
// addresses of this file's own, which no control plane on this machine hands to a VM meanwhile
let addresses: LoopbackRange;
beforeAll(async () => {
  addresses = await claimLoopbackRange(undefined);
});
afterAll(() => addresses.release());
const address = (last: number) => addresses.cidr.replace(/0\.0\/16$/, `0.${last}`);

describe("the test kit's RDP server", () => {
  it('reads the knob: tls, or nla with one account; anything else is no knob', () => {
    expect(parseRdpGuestKnob('tls')).toEqual({ kind: 'tls' });
    expect(parseRdpGuestKnob(' nla alice s3cret ')).toEqual({
      kind: 'nla',
      user: 'alice',
      password: 's3cret',
    });
    for (const bad of [undefined, '', 'rdp', 'nla alice', 'tls extra', 'nla a b c']) {
      expect(parseRdpGuestKnob(bad)).toBeUndefined();
    }
  });

  it('runs FreeRDP on its own Xvfb display in both modes, and stops both processes', async () => {
    for (const security of [
      { kind: 'tls' } as const,
      { kind: 'nla', user: 'alice', password: 's3cret-pass' } as const,
    ]) {
      const started = performance.now();
      const server = await startRdpServer({ host: address(9), security });
      process.stderr.write(
        `rdp guest (${security.kind}): listening after ${(performance.now() - started).toFixed(0)} ms\n`,
      );
      expect(server.display).toMatch(/^:\d+$/);
      const { stdout } = await run('xdotool', ['getdisplaygeometry'], {
        env: { ...process.env, DISPLAY: server.display },
      });
      expect(stdout.trim()).toBe('1024 768');
      await server.stop();
      await expect(
        run('xdotool', ['getdisplaygeometry'], { env: { ...process.env, DISPLAY: server.display } }),
      ).rejects.toThrow();
    }
  });

  it('refuses an address and port another process already listens on, rather than report that one as its own', async () => {
    const host = address(10);
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(3389, host, resolve));
    try {
      await expect(startRdpServer({ host, security: { kind: 'tls' } })).rejects.toThrow(
        `${host}:3389 already answers: another process listens there`,
      );
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
