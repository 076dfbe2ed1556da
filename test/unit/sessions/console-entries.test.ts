import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import {
  type ConsoleEntry,
  formatConsoleEntries,
  judgeConsoleEntries,
  readConsoleEntries,
} from '../../../src/sessions/console-entries.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);

function leaseWith(consoles: string | undefined): LeaseObject {
  return {
    metadata: {
      name: 'corral-vdi-devpool-1',
      annotations: consoles === undefined ? {} : { 'corral.dev/vdi-consoles': consoles },
    },
    spec: { holderIdentity: 'alice@example.com' },
  };
}

const entry = (open: number, seen: number, expires = seen + 3): ConsoleEntry => ({
  open,
  seenAt: at(seen),
  expiresAt: at(expires),
});

describe('the console entries of a claim Lease', () => {
  it('are written as compact JSON with the replicas in order, and read back', () => {
    const entries = new Map([
      ['broker-b', entry(2, 5)],
      ['broker-a', entry(1, 4)],
    ]);
    const text = formatConsoleEntries(entries);
    expect(text).toBe(
      '{"broker-a":{"open":1,"seenAt":"2026-07-02T12:04:00.000Z","expiresAt":"2026-07-02T12:07:00.000Z"},' +
        '"broker-b":{"open":2,"seenAt":"2026-07-02T12:05:00.000Z","expiresAt":"2026-07-02T12:08:00.000Z"}}',
    );
    expect(readConsoleEntries(leaseWith(text))).toEqual(entries);
    expect(formatConsoleEntries(new Map())).toBeUndefined();
  });

  it.each([
    ['no annotation', undefined],
    ['text that is not JSON', '{"broker-a":'],
    ['a JSON array', '[1,2]'],
    ['JSON null', 'null'],
    [
      'an entry without a count',
      '{"a":{"seenAt":"2026-07-02T12:00:00Z","expiresAt":"2026-07-02T12:03:00Z"}}',
    ],
    [
      'an entry with no open console',
      '{"a":{"open":0,"seenAt":"2026-07-02T12:00:00Z","expiresAt":"2026-07-02T12:03:00Z"}}',
    ],
    [
      'an entry with a fractional count',
      '{"a":{"open":1.5,"seenAt":"2026-07-02T12:00:00Z","expiresAt":"2026-07-02T12:03:00Z"}}',
    ],
    [
      'an entry with a time that is no RFC 3339',
      '{"a":{"open":1,"seenAt":"yesterday","expiresAt":"2026-07-02T12:03:00Z"}}',
    ],
  ])('read as no entries from %s', (_, text) => {
    expect(readConsoleEntries(leaseWith(text))).toEqual(new Map());
  });

  it('keep the well-formed entries beside a malformed one', () => {
    const text =
      '{"bad":{"open":"1"},"good":{"open":3,"seenAt":"2026-07-02T12:01:00Z","expiresAt":"2026-07-02T12:04:00Z"}}';
    expect(readConsoleEntries(leaseWith(text))).toEqual(new Map([['good', entry(3, 1, 4)]]));
  });

  it('are live until their expiry, then give the latest expiry of a dead replica', () => {
    const entries = new Map([
      ['broker-a', entry(1, 0, 3)],
      ['broker-b', entry(1, 1, 4)],
      ['broker-c', entry(2, 2, 5)],
    ]);
    expect(judgeConsoleEntries(entries, at(3.5), at(0))).toEqual({
      live: new Map([
        ['broker-b', entry(1, 1, 4)],
        ['broker-c', entry(2, 2, 5)],
      ]),
      lostAt: at(3),
    });
    expect(judgeConsoleEntries(entries, at(5), at(0))).toEqual({ live: new Map(), lostAt: at(5) });
  });

  it('count for nothing when written before the claim began', () => {
    const entries = new Map([['broker-a', entry(1, -1, 30)]]);
    expect(judgeConsoleEntries(entries, at(5), at(0))).toEqual({ live: new Map(), lostAt: undefined });
  });

  it('read back as written for any replicas, counts and times', () => {
    const anyEntry = fc.record({
      open: fc.integer({ min: 1, max: 1000 }),
      seen: fc.integer({ min: -100_000, max: 100_000 }),
      life: fc.integer({ min: 0, max: 1000 }),
    });
    const replica = fc.stringMatching(/^[\x21-\x7e]{1,40}$/);
    fc.assert(
      fc.property(fc.dictionary(replica, anyEntry), (spec) => {
        const entries = new Map(
          Object.entries(spec).map(([id, { open, seen, life }]) => [id, entry(open, seen, seen + life)]),
        );
        expect(readConsoleEntries(leaseWith(formatConsoleEntries(entries)))).toEqual(entries);
      }),
    );
  });
});
