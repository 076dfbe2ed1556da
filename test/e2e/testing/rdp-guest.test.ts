import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseRdpGuestKnob, startRdpServer } from '../../../src/testing/rdp-guest.js';

const run = promisify(execFile);

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
      const server = await startRdpServer({ host: '127.4.0.9', security });
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
});
