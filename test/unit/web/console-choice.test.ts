import { describe, expect, it } from 'vitest';
import type { ConnectAnswerBody } from '../../../src/broker/schemas.js';
import { VdiError } from '../../../src/errors.js';
import { chooseConsole, nextOffer } from '../../../src/web/console-choice.js';
import { describeConsoleEnd, describeError, describeSession } from '../../../src/web/describe-session.js';

const answer = (over: Partial<ConnectAnswerBody>): ConnectAnswerBody => ({
  desktopId: 'vm/corral-vms/devpool-1',
  namespace: 'corral-vms',
  member: 'devpool-1',
  holder: 'alice@example.com',
  target: { protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' },
  fallbacks: [],
  skipped: [],
  launches: [],
  ...over,
});

describe('the console the page opens', () => {
  it('is the plan target, keeping the plan skips', () => {
    const chosen = chooseConsole(
      answer({ skipped: [{ protocol: 'rdp', reason: 'TCP 3389 did not answer from the broker.' }] }),
    );
    expect(chosen).toEqual({
      protocol: 'vnc',
      offers: [{ protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' }],
      skipped: [{ protocol: 'rdp', reason: 'TCP 3389 did not answer from the broker.' }],
    });
  });

  it('opens an RDP target in the page, with the fallbacks behind it in the plan order', () => {
    const vnc = { protocol: 'vnc', namespace: 'corral-vms', vm: 'devpool-1' } as const;
    const serial = { protocol: 'serial', namespace: 'corral-vms', vm: 'devpool-1' } as const;
    const rdp = { protocol: 'rdp', host: '10.0.0.5', port: 3389 } as const;
    const chosen = chooseConsole(answer({ target: rdp, fallbacks: [vnc, serial] }));
    expect(chosen.protocol).toBe('rdp');
    expect(chosen.offers).toEqual([rdp, vnc, serial]);
    expect(chosen.skipped).toEqual([]);
    expect(nextOffer(chosen.offers, 'rdp')).toEqual(vnc);
    expect(nextOffer(chosen.offers, 'vnc')).toEqual(serial);
    expect(nextOffer(chosen.offers, 'serial')).toBeUndefined();
    expect(nextOffer([rdp], 'rdp')).toBeUndefined();
  });

  it('opens a container terminal', () => {
    const chosen = chooseConsole(
      answer({
        target: { protocol: 'terminal', namespace: 'corral-cts', pod: 'ctpool-1', shell: '/bin/sh' },
      }),
    );
    expect(chosen.protocol).toBe('terminal');
  });
});

describe('the words the page shows', () => {
  const desktop = {
    id: 'vm/corral-vms/devpool-1',
    kind: 'vm',
    namespace: 'corral-vms',
    member: 'devpool-1',
    pool: 'devpool',
    poolId: 'vm/corral-vms/devpool',
    owner: 'alice@example.com',
    sessionId: 's-1',
    claimedAt: '2026-01-01T10:00:00Z',
    expiresAt: '2026-01-01T11:00:00Z',
    legacy: false,
    phase: 'Running',
    running: true,
    ephemeral: false,
    connected: false,
    disconnectedAt: null,
    reclaimAt: null,
    reclaimReason: null,
  } as const;

  it('say a session is connected, or since when it is not and when it is reclaimed and why', () => {
    expect(describeSession({ ...desktop, connected: true })).toBe('Connected.');
    expect(describeSession(desktop)).toBe('Not connected.');
    const dropped = describeSession({
      ...desktop,
      disconnectedAt: '2026-01-01T10:30:00Z',
      reclaimAt: '2026-01-01T10:45:00Z',
      reclaimReason: 'disconnect-grace',
    });
    expect(dropped).toMatch(/^Disconnected since .+; reclaimed at .+ because no console has been open/);
  });

  it("give the broker's message for its errors and name anything else", () => {
    expect(describeError(new VdiError('DESKTOP_STOPPED', 'The desktop is stopped; start it first.'))).toBe(
      'The desktop is stopped; start it first.',
    );
    expect(describeError(new Error('boom'))).toBe('Something went wrong: boom.');
  });

  it("prefer the broker's close reason, and call an abnormal close a drop", () => {
    expect(describeConsoleEnd({ code: 4000, reason: 'the desktop was released' })).toBe(
      'The console closed: the desktop was released',
    );
    expect(describeConsoleEnd({ code: 1000, reason: '' })).toBe('The console closed.');
    expect(describeConsoleEnd({ code: 1006, reason: '' })).toBe(
      'The connection to the console dropped (code 1006).',
    );
  });
});
