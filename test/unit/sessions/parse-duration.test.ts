import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { formatDuration, parseDuration } from '../../../src/sessions/parse-duration.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['15m', 15 * 60_000],
    ['8h', 8 * 3_600_000],
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['2h0m5s', 7_205_000],
    ['250ms', 250],
    ['1m500ms', 60_500],
    ['007s', 7000],
  ])('reads %j as %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each([
    ['', 'is empty'],
    ['-5m', 'is negative'],
    ['15', 'without a unit'],
    ['1h30', 'without a unit'],
    ['15d', 'unknown unit "d"'],
    ['15M', 'unknown unit "M"'],
    ['15min', 'unknown unit "min"'],
    ['1.5h', 'fraction'],
    ['m', 'where a number belongs'],
    [' 15m', 'where a number belongs'],
    ['1h1h', 'repeats a unit'],
    ['30m1h', 'after a smaller unit'],
    ['2501999792983h', 'too long'],
    ['99999999999999999999999s', 'too long'],
  ])('rejects %j because it %s', (text, problem) => {
    let caught: unknown;
    try {
      parseDuration(text);
    } catch (error) {
      caught = error;
    }
    expect(isVdiError(caught, 'INVALID_INPUT')).toBe(true);
    expect((caught as Error).message).toContain(problem);
    expect((caught as Error).message).toContain('for example');
  });

  it('reads any composed h/m/s/ms duration as the sum of its parts', () => {
    fc.assert(
      fc.property(
        fc.option(fc.nat(10_000)),
        fc.option(fc.nat(10_000)),
        fc.option(fc.nat(10_000)),
        fc.option(fc.nat(10_000)),
        (h, m, s, ms) => {
          const parts: Array<[number | null, string]> = [
            [h, 'h'],
            [m, 'm'],
            [s, 's'],
            [ms, 'ms'],
          ];
          const text = parts.map(([count, unit]) => (count === null ? '' : `${count}${unit}`)).join('');
          fc.pre(text !== '');
          const expected = (h ?? 0) * 3_600_000 + (m ?? 0) * 60_000 + (s ?? 0) * 1000 + (ms ?? 0);
          expect(parseDuration(text)).toBe(expected);
        },
      ),
    );
  });

  it('either returns a whole non-negative number of ms or throws INVALID_INPUT for any text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        try {
          const ms = parseDuration(text);
          expect(Number.isSafeInteger(ms) && ms >= 0).toBe(true);
        } catch (error) {
          expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
        }
      }),
    );
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0'],
    [1, '1ms'],
    [2000, '2s'],
    [90_000, '1m30s'],
    [5_400_250, '1h30m250ms'],
  ])('writes %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('writes text that parseDuration reads back as the same milliseconds', () => {
    fc.assert(
      fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});
