import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { formatDuration, parseDuration, parseDurationNanoseconds } from '../../src/parse-duration.js';

const nsPerUnit = {
  h: 3_600_000_000_000n,
  m: 60_000_000_000n,
  s: 1_000_000_000n,
  ms: 1_000_000n,
  us: 1000n,
  µs: 1000n,
  μs: 1000n,
  ns: 1n,
} as const;
type Unit = keyof typeof nsPerUnit;
const units = Object.keys(nsPerUnit) as Unit[];
// Go's time.Duration is an int64 of nanoseconds
const goMaxNs = 2n ** 63n - 1n;

function rejectionOf(text: string): Error {
  try {
    parseDuration(text);
  } catch (error) {
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    return error as Error;
  }
  throw new Error(`parseDuration(${JSON.stringify(text)}) did not throw`);
}

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
    ['1.5h', 5_400_000],
    ['2h45m30.5s', 9_930_500],
    ['300ms', 300],
    ['.5s', 500],
    ['5.s', 5000],
    ['1.0000001s', 1001],
    ['1h1h', 7_200_000],
    ['30m1h', 5_400_000],
    ['+15m', 900_000],
    ['-0', 0],
    ['+0', 0],
    ['-0s', 0],
    ['2000us', 2],
    ['2000µs', 2],
    ['2000μs', 2],
    ['3000000ns', 3],
    ['2562047h47m16.854775807s', 9_223_372_036_855],
  ])('reads %j as %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each([
    ['500us', 1],
    ['1ns', 1],
    ['1.0001ms', 2],
    ['999999ns', 1],
  ])('rounds %j up to %d ms, so a positive duration never reads as 0 (off)', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each([
    ['', 'is empty'],
    ['-5m', 'is negative'],
    ['-1.5h', 'is negative'],
    ['-1ns', 'is negative'],
    ['-', 'where a number belongs'],
    ['+', 'where a number belongs'],
    ['15', 'without a unit'],
    ['00', 'without a unit'],
    ['1h30', 'without a unit'],
    ['1.2.3s', 'without a unit'],
    ['15d', 'unknown unit "d"'],
    ['15M', 'unknown unit "M"'],
    ['15min', 'unknown unit "min"'],
    ['1toString', 'unknown unit "toString"'],
    ['1h 30m', 'unknown unit "h "'],
    ['m', 'where a number belongs'],
    ['.s', 'where a number belongs'],
    [' 15m', 'where a number belongs'],
    ['--5m', 'where a number belongs'],
    ['2562047h47m16.854775808s', 'too long'],
    ['99999999999999999999999s', 'too long'],
  ])('rejects %j, saying it %s', (text, problem) => {
    const error = rejectionOf(text);
    expect(error.message).toContain(problem);
    expect(error.message).toContain('for example');
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

/** One `number unit` part of a Go duration, with the nanoseconds it stands for computed apart from the parser. */
const goPart = fc
  .record({
    whole: fc.option(fc.bigInt({ min: 0n, max: 10_000n }), { nil: undefined }),
    fraction: fc.option(fc.bigInt({ min: 0n, max: 999_999_999_999n }), { nil: undefined }),
    leadingZeros: fc.nat(2),
    unit: fc.constantFrom(...units),
  })
  .filter(({ whole, fraction }) => whole !== undefined || fraction !== undefined)
  .map(({ whole, fraction, leadingZeros, unit }) => {
    const scale = nsPerUnit[unit];
    // as many digits after the point as the unit's nanoseconds have trailing zeros, so the value is exact
    const digits = /0*$/.exec(scale.toString())?.[0].length ?? 0;
    const fractionDigits =
      fraction === undefined
        ? undefined
        : (fraction % 10n ** BigInt(digits)).toString().padStart(digits, '0');
    const wholeText = whole === undefined ? '' : '0'.repeat(leadingZeros) + whole.toString();
    const text = `${wholeText}${fractionDigits === undefined ? '' : `.${fractionDigits}`}${unit}`;
    const fractionNs = fractionDigits ? BigInt(fractionDigits) * (scale / 10n ** BigInt(digits)) : 0n;
    return { text, ns: (whole ?? 0n) * scale + fractionNs };
  });

const goDuration = fc
  .record({ sign: fc.constantFrom('', '+'), parts: fc.array(goPart, { minLength: 1, maxLength: 5 }) })
  .map(({ sign, parts }) => ({
    text: sign + parts.map((part) => part.text).join(''),
    ns: parts.reduce((sum, part) => sum + part.ns, 0n),
  }));

describe('parseDurationNanoseconds, against Go’s grammar [-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+', () => {
  it('reads any sequence of numbers with units, in any order and repeated, as the sum of its parts', () => {
    fc.assert(
      fc.property(goDuration, ({ text, ns }) => {
        expect(parseDurationNanoseconds(text)).toBe(ns);
      }),
    );
  });

  it('reads a negative sequence as INVALID_INPUT unless it is zero', () => {
    fc.assert(
      fc.property(goDuration, ({ text, ns }) => {
        const negative = `-${text.replace(/^\+/, '')}`;
        if (ns === 0n) expect(parseDurationNanoseconds(negative)).toBe(0n);
        else expect(rejectionOf(negative).message).toContain('is negative');
      }),
    );
  });

  it('rounds to milliseconds upwards, never to 0 from a positive duration', () => {
    fc.assert(
      fc.property(goDuration, ({ text, ns }) => {
        const ms = BigInt(parseDuration(text));
        expect(ms).toBe((ns + 999_999n) / 1_000_000n);
      }),
    );
  });

  it('reads a duration followed by a number without a unit, or by an unknown unit, as INVALID_INPUT', () => {
    fc.assert(
      fc.property(
        goDuration,
        fc.nat(),
        fc.constantFrom('', 'd', 'min', 'H', 'sec', ' ', 'hs'),
        ({ text }, count, unit) => {
          expect(rejectionOf(`${text}${count}${unit}`).message).toMatch(/without a unit|unknown unit/);
        },
      ),
    );
  });

  it('reads every count of nanoseconds Go can hold, up to 2^63-1, and refuses what Go refuses beyond it', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: goMaxNs }),
        fc.bigInt({ min: 1n, max: goMaxNs }),
        (ns, excess) => {
          expect(parseDurationNanoseconds(`${ns}ns`)).toBe(ns);
          expect(rejectionOf(`${goMaxNs + excess}ns`).message).toContain('too long');
        },
      ),
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
      fc.property(fc.nat({ max: 9_223_372_036_854 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});
