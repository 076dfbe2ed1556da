import { VdiError } from '../errors.js';

const unitMs = { h: 3_600_000n, m: 60_000n, s: 1000n, ms: 1n } as const;
type Unit = keyof typeof unitMs;
// largest first: a duration names each unit at most once, in this order
const unitOrder: readonly Unit[] = ['h', 'm', 's', 'ms'];
// a unit is never followed by a letter, so "15min" reads as one unknown unit
const partPattern = /(\d+)(ms|h|m|s)(?![A-Za-z])/y;
const example = 'for example "15m", "8h", "90s", "1h30m" or "0"';

function invalid(text: string, problem: string): VdiError {
  return new VdiError(
    'INVALID_INPUT',
    `Duration "${text}" ${problem}; write whole numbers with units h, m, s or ms, ${example}.`,
    {
      details: { duration: text },
    },
  );
}

/**
 * Parses a duration such as a reclaim policy setting: whole numbers with the units `h`, `m`, `s` and `ms`,
 * largest unit first, each at most once (`15m`, `8h`, `90s`, `1h30m`). A bare `0` means zero.
 *
 * @returns the duration in milliseconds.
 * @example
 * ```ts
 * parseDuration('1h30m'); // 5_400_000
 * parseDuration('0'); // 0
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the text is empty, negative, has a fraction, a number without a
 *   unit, an unknown or repeated unit, units out of order, or a value beyond `Number.MAX_SAFE_INTEGER` ms.
 * @category sessions
 */
export function parseDuration(text: string): number {
  if (text === '') throw invalid(text, 'is empty');
  if (text === '0') return 0;
  if (text.startsWith('-')) throw invalid(text, 'is negative');

  let total = 0n;
  let position = 0;
  let lastUnitIndex = -1;
  while (position < text.length) {
    partPattern.lastIndex = position;
    const match = partPattern.exec(text);
    if (match === null) throw invalid(text, describeProblemAt(text, position));
    const unit = match[2] as Unit;
    const unitIndex = unitOrder.indexOf(unit);
    if (unitIndex <= lastUnitIndex)
      throw invalid(text, `repeats a unit or puts "${unit}" after a smaller unit`);
    lastUnitIndex = unitIndex;
    total += BigInt(match[1] ?? '0') * unitMs[unit];
    position = partPattern.lastIndex;
  }
  if (total > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(text, 'is too long');
  return Number(total);
}

function describeProblemAt(text: string, position: number): string {
  const rest = text.slice(position);
  const digits = /^\d+/.exec(rest)?.[0] ?? '';
  if (digits === '') return `has "${rest.charAt(0)}" where a number belongs`;
  const after = rest.slice(digits.length);
  if (after === '') return `ends in a number without a unit`;
  if (after.startsWith('.')) return 'has a fraction';
  const unit = /^[^\d]+/.exec(after)?.[0] ?? after;
  return `has the unknown unit "${unit}"`;
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
  let rest = BigInt(Math.max(0, Math.round(ms)));
  if (rest === 0n) return '0';
  let text = '';
  for (const unit of unitOrder) {
    const count = rest / unitMs[unit];
    if (count > 0n) text += `${count}${unit}`;
    rest %= unitMs[unit];
  }
  return text;
}
