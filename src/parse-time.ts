const rfc3339Pattern =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

// a claim classifies every Lease of its pool each time it plans: each timestamp is parsed once
const maxParsed = 10_000;
// NaN for text that is no timestamp
const parsedMillis = new Map<string, number>();

/**
 * Parses an RFC 3339 timestamp such as a Lease's `renewTime` (`2026-07-02T12:00:00.123456Z`) or a VM's
 * `corral.dev/vdi-claimed-at` (`2026-07-02T12:00:00Z`). Digits beyond milliseconds are dropped. Written out
 * rather than left to `Date.parse`, whose handling of anything but millisecond precision varies by engine.
 *
 * @returns the instant, or `undefined` when `text` is not an RFC 3339 timestamp or names an impossible date.
 * @example
 * ```ts
 * parseRfc3339('2026-07-02T14:00:00.123456+02:00')?.toISOString(); // '2026-07-02T12:00:00.123Z'
 * ```
 * @category claims
 */
export function parseRfc3339(text: string): Date | undefined {
  let millis = parsedMillis.get(text);
  if (millis === undefined) {
    millis = parseMillis(text);
    if (parsedMillis.size >= maxParsed) parsedMillis.clear();
    parsedMillis.set(text, millis);
  }
  return Number.isNaN(millis) ? undefined : new Date(millis);
}

function parseMillis(text: string): number {
  const match = rfc3339Pattern.exec(text);
  if (match === null) return Number.NaN;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [1, 2, 3, 4, 5, 6, 9, 10].map(
    (group) => Number(match[group] ?? 0),
  ) as [number, number, number, number, number, number, number, number];
  if (hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) return Number.NaN;
  const offset = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  const millis = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // a rolled-over day or month means the date does not exist, such as February 30
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return Number.NaN;
  // a leap second (:60) reads as the first instant of the next minute
  return date.setUTCHours(hour, minute - offset, second, millis);
}
