import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRfc3339 } from '../../src/parse-time.js';

describe('parseRfc3339', () => {
  it.each([
    ['2026-07-02T12:00:00Z', '2026-07-02T12:00:00.000Z'],
    ['2026-07-02T12:00:00.123456Z', '2026-07-02T12:00:00.123Z'],
    ['2026-07-02T12:00:00.5Z', '2026-07-02T12:00:00.500Z'],
    ['2026-07-02t12:00:00z', '2026-07-02T12:00:00.000Z'],
    ['2026-07-02T14:00:00+02:00', '2026-07-02T12:00:00.000Z'],
    ['2026-07-02T00:30:00-01:30', '2026-07-02T02:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2016-12-31T23:59:60Z', '2017-01-01T00:00:00.000Z'],
    ['0050-01-01T00:00:00Z', '0050-01-01T00:00:00.000Z'],
  ])('reads %j as %s', (text, iso) => {
    expect(parseRfc3339(text)?.toISOString()).toBe(iso);
  });

  it.each([
    '',
    '2026-07-02',
    '2026-07-02T12:00:00',
    '2026-07-02T12:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-01T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-07-02T24:00:00Z',
    '2026-07-02T12:60:00Z',
    '2026-07-02T12:00:00+24:00',
    '2026-07-02T12:00:00.Z',
    'Thu, 02 Jul 2026 12:00:00 GMT',
  ])('rejects %j', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });

  it('reads back what toISOString writes', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        }),
        (date) => {
          expect(parseRfc3339(date.toISOString())?.getTime()).toBe(date.getTime());
        },
      ),
    );
  });
});
