import { parseRfc3339 } from './parse-time.js';

/**
 * Writes an instant in the one time format of every JSON output: RFC 3339 in UTC with milliseconds.
 *
 * @example
 * ```ts
 * formatTime(new Date(Date.UTC(2026, 6, 2, 12, 0, 0, 5))); // '2026-07-02T12:00:00.005Z'
 * ```
 * @category time
 */
export function formatTime(instant: Date): string {
  return instant.toISOString();
}

/**
 * Rewrites an RFC 3339 time read from the cluster, such as a Lease's `acquireTime` with microseconds or an
 * annotation with an offset, in the format of {@link formatTime}.
 *
 * @returns the rewritten time, or `undefined` when `text` is undefined or not an RFC 3339 time.
 * @example
 * ```ts
 * normalizeTime('2026-07-02T14:00:46.287000+02:00'); // '2026-07-02T12:00:46.287Z'
 * ```
 * @category time
 */
export function normalizeTime(text: string | undefined): string | undefined {
  const instant = text === undefined ? undefined : parseRfc3339(text);
  return instant && formatTime(instant);
}

const utcPattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

/**
 * Writes a Lease time as the MicroTime the apiserver requires: UTC with exactly six fraction digits, keeping
 * the microseconds a time already has. Text that is no RFC 3339 time is returned as it is, for the apiserver
 * to refuse.
 */
export function formatMicroTime(text: string): string {
  const utc = utcPattern.exec(text);
  if (utc) return `${utc[1]}.${(utc[2] ?? '').padEnd(6, '0').slice(0, 6)}Z`;
  const instant = parseRfc3339(text);
  return instant ? formatTime(instant).replace(/Z$/, '000Z') : text;
}
