import { VdiError } from './errors.js';

const nsPerMs = 1_000_000n;
// largest first, as formatDuration writes them
const formattedUnits = [
  ['h', 3_600_000_000_000n],
  ['m', 60_000_000_000n],
  ['s', 1_000_000_000n],
  ['ms', nsPerMs],
] as const;
// Go's units, with both spellings of the micro sign (U+00B5 and U+03BC), as time.ParseDuration reads them
const nsPerUnit: ReadonlyMap<string, bigint> = new Map([
  ...formattedUnits,
  ['us', 1000n],
  ['\u00b5s', 1000n],
  ['\u03bcs', 1000n],
  ['ns', 1n],
]);
// Go's time.Duration is an int64 of nanoseconds; anything longer Go refuses too
const maxNanoseconds = 2n ** 63n - 1n;
// a unit runs up to the next digit or point, so "15min" and "1h 30m" read as unknown units
const partPattern = /(\d*)(?:\.(\d*))?([^\d.]*)/y;
const example = 'for example "15m", "1.5h", "1h30m", "300ms" or "0"';

function invalid(text: string, problem: string): VdiError {
  return new VdiError(
    'INVALID_INPUT',
    `Duration "${text}" ${problem}; write numbers with units h, m, s, ms, us or ns as Go does, ${example}.`,
    {
      details: { duration: text },
    },
  );
}

/** Reads a duration as Go's `time.ParseDuration` does, to whole nanoseconds; see {@link parseDuration}. */
export function parseDurationNanoseconds(text: string): bigint {
  if (text === '') throw invalid(text, 'is empty');
  const negative = text.startsWith('-');
  const body = negative || text.startsWith('+') ? text.slice(1) : text;
  if (body === '0') return 0n;
  if (body === '') throw invalid(text, 'has nothing after its sign where a number belongs');

  let total = 0n;
  let position = 0;
  while (position < body.length) {
    partPattern.lastIndex = position;
    const [part = '', whole = '', fraction = '', unit = ''] = partPattern.exec(body) ?? [];
    if (whole === '' && fraction === '')
      throw invalid(text, `has "${body.charAt(position)}" where a number belongs`);
    if (unit === '') throw invalid(text, `has the number "${part}" without a unit`);
    const scale = nsPerUnit.get(unit);
    if (scale === undefined) throw invalid(text, `has the unknown unit "${unit}"`);
    total += BigInt(whole || '0') * scale;
    if (fraction !== '') total += (BigInt(fraction) * scale) / 10n ** BigInt(fraction.length);
    if (total > maxNanoseconds) throw invalid(text, 'is too long');
    position = partPattern.lastIndex;
  }
  if (negative && total > 0n) throw invalid(text, 'is negative');
  return total;
}

/**
 * Parses a duration such as a reclaim policy setting, written as Go's `time.ParseDuration` reads it, so values
 * copied from the original's configuration work: a sequence of decimal numbers, each with an optional fraction
 * and a unit (`h`, `m`, `s`, `ms`, `us` or `µs`, `ns`), in any order, optionally signed (`1.5h`, `1h30m`,
 * `2h45m30.5s`, `300ms`, `500us`, `+15m`); a bare `0` means zero. A part of a millisecond rounds up, so a
 * duration above zero never reads as `0`, which turns a setting off.
 *
 * @returns the duration in whole milliseconds.
 * @example
 * ```ts
 * parseDuration('1h30m'); // 5_400_000
 * parseDuration('1.5h'); // 5_400_000
 * parseDuration('500us'); // 1
 * parseDuration('0'); // 0
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the text is empty, has no number where one belongs, a number
 *   without a unit or an unknown unit, is below zero (no setting here takes a negative duration), or is longer
 *   than Go's longest duration, 2562047h47m16.854775807s.
 * @category sessions
 */
export function parseDuration(text: string): number {
  return Number((parseDurationNanoseconds(text) + nsPerMs - 1n) / nsPerMs);
}

/**
 * Writes milliseconds as the duration text {@link parseDuration} reads back: `2s`, `1m30s`, `250ms`, `0`.
 *
 * @example
 * ```ts
 * formatDuration(5_400_000); // '1h30m'
 * ```
 * @category sessions
 */
export function formatDuration(ms: number): string {
  let rest = BigInt(Math.max(0, Math.round(ms))) * nsPerMs;
  if (rest === 0n) return '0';
  let text = '';
  for (const [unit, scale] of formattedUnits) {
    const count = rest / scale;
    if (count > 0n) text += `${count}${unit}`;
    rest %= scale;
  }
  return text;
}
