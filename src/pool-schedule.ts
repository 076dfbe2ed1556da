import { VdiError } from './errors.js';

/** A day of the week as a schedule names it. @category schedules */
export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';

/** The days of the week, Monday first. @category schedules */
export const weekdays: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/**
 * How many free running members a period keeps: a number, or a share of the members claimed now (`{ percent: 30 }`
 * keeps 3 free for 10 claimed, rounded up).
 *
 * @category schedules
 */
export type ScheduleBuffer = { count: number } | { percent: number };

/**
 * One period of a pool's schedule: on `days`, from `start` to `end` in the schedule's time zone (wall-clock
 * `HH:MM`, `end` after `start`; `24:00` ends at midnight), the pool keeps `buffer` free members running, and its
 * size between `min` and `max`.
 *
 * @category schedules
 */
export interface SchedulePeriod {
  /** A name for status and events, such as `peak`: 1 to 40 letters, digits and `-`. */
  name: string;
  days: Weekday[];
  start: string;
  end: string;
  buffer: ScheduleBuffer;
  /** The fewest members the pool has during the period. */
  min: number;
  /** The most members the pool has during the period; growth stops here. */
  max: number;
  /**
   * Whether the free running members may go down to none. Without it the period keeps at least one free member
   * running, also when its percentage of no claimed members is 0.
   * @defaultValue false
   */
  scaleToZero: boolean;
}

/**
 * A pool's schedule: named periods in an IANA time zone. Outside every period the pool's plain settings hold (its
 * plain size and `minReady`).
 *
 * @category schedules
 */
export interface PoolSchedule {
  /** An IANA time zone such as `Europe/Berlin`; its daylight saving changes are followed. */
  timeZone: string;
  periods: SchedulePeriod[];
}

const namePattern = /^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/;
const timePattern = /^([01]\d|2[0-3]):([0-5]\d)$|^24:00$/;
const maxMembers = 1000;

function invalid(field: string, message: string): VdiError {
  return new VdiError('INVALID_INPUT', `${message} Nothing was written.`, { details: { field } });
}

/** Minutes since midnight of a wall-clock `HH:MM` (`24:00` is 1440). @category schedules */
export function minutesOf(time: string): number {
  const [hours, minutes] = time.split(':').map(Number);
  return (hours ?? 0) * 60 + (minutes ?? 0);
}

/**
 * Whether a time zone is one the runtime's `Intl` knows by its IANA name.
 *
 * @category schedules
 */
export function isKnownTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return timeZone.includes('/') || timeZone === 'UTC';
  } catch {
    return false;
  }
}

function wholeIn(value: unknown, low: number, high: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= low && value <= high;
}

function parseBuffer(raw: unknown, field: string): ScheduleBuffer {
  if (wholeIn(raw, 0, maxMembers)) return { count: raw };
  if (typeof raw === 'string') {
    const percent = /^(\d{1,3})%$/.exec(raw.trim());
    if (percent && Number(percent[1]) <= 100) return { percent: Number(percent[1]) };
    if (/^\d{1,4}$/.test(raw.trim()) && Number(raw) <= maxMembers) return { count: Number(raw) };
  }
  if (typeof raw === 'object' && raw !== null) {
    const { count, percent } = raw as { count?: unknown; percent?: unknown };
    if (wholeIn(count, 0, maxMembers) && percent === undefined) return { count };
    if (wholeIn(percent, 0, 100) && count === undefined) return { percent };
  }
  throw invalid(
    field,
    `${field} is ${JSON.stringify(raw)}; write a number of members (3) or a share of the claimed ones ("30%").`,
  );
}

function parseDays(raw: unknown, field: string): Weekday[] {
  const items = typeof raw === 'string' ? raw.split(',') : raw;
  if (!Array.isArray(items) || items.length === 0) {
    throw invalid(field, `${field} needs one or more days, such as [mon, tue] or "mon-fri".`);
  }
  const days = new Set<Weekday>();
  for (const item of items) {
    const text = String(item).trim().toLowerCase().slice(0, 3);
    const range = /^([a-z]{3})-([a-z]{3})$/.exec(String(item).trim().toLowerCase());
    if (range) {
      const from = weekdays.indexOf(range[1] as Weekday);
      const to = weekdays.indexOf(range[2] as Weekday);
      if (from < 0 || to < from)
        throw invalid(field, `${field} has the range "${String(item)}"; write mon-fri, Monday first.`);
      for (const day of weekdays.slice(from, to + 1)) days.add(day);
      continue;
    }
    if (!weekdays.includes(text as Weekday) || String(item).trim().length > 9) {
      throw invalid(
        field,
        `${field} has "${String(item)}", which is no day; use mon, tue, wed, thu, fri, sat, sun.`,
      );
    }
    days.add(text as Weekday);
  }
  return weekdays.filter((day) => days.has(day));
}

function parsePeriod(raw: unknown, at: number): SchedulePeriod {
  const field = `periods[${at}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalid(field, `${field} is not a mapping; give name, days, start, end, buffer, min and max.`);
  }
  const known = new Set(['name', 'days', 'start', 'end', 'buffer', 'min', 'max', 'scaleToZero']);
  const unknown = Object.keys(raw).find((key) => !known.has(key));
  if (unknown !== undefined) {
    throw invalid(
      `${field}.${unknown}`,
      `${field} has the unknown field "${unknown}"; the fields are ${[...known].join(', ')}.`,
    );
  }
  const period = raw as Record<string, unknown>;
  const name = period.name;
  if (typeof name !== 'string' || !namePattern.test(name)) {
    throw invalid(
      `${field}.name`,
      `${field}.name must be 1 to 40 lowercase letters, digits and "-", such as "peak".`,
    );
  }
  for (const key of ['start', 'end'] as const) {
    const time = period[key];
    if (typeof time !== 'string' || !timePattern.test(time) || (key === 'start' && time === '24:00')) {
      throw invalid(
        `${field}.${key}`,
        `${field}.${key} must be a wall-clock time HH:MM such as "09:00"${key === 'end' ? ' ("24:00" for midnight)' : ''}.`,
      );
    }
  }
  const start = period.start as string;
  const end = period.end as string;
  if (minutesOf(end) <= minutesOf(start)) {
    throw invalid(
      `${field}.end`,
      `${field} ends at ${end}, not after it starts at ${start}; split a period across midnight in two.`,
    );
  }
  const min = period.min ?? 0;
  const max = period.max;
  if (!wholeIn(min, 0, maxMembers))
    throw invalid(`${field}.min`, `${field}.min must be a whole number from 0 to ${maxMembers}.`);
  if (!wholeIn(max, 1, maxMembers) || max < min) {
    throw invalid(
      `${field}.max`,
      `${field}.max must be a whole number from max(1, min) to ${maxMembers}: the most members the period allows.`,
    );
  }
  const scaleToZero = period.scaleToZero ?? false;
  if (typeof scaleToZero !== 'boolean')
    throw invalid(`${field}.scaleToZero`, `${field}.scaleToZero must be true or false.`);
  return {
    name,
    days: parseDays(period.days, `${field}.days`),
    start,
    end,
    buffer: parseBuffer(period.buffer, `${field}.buffer`),
    min,
    max,
    scaleToZero,
  };
}

function overlaps(left: SchedulePeriod, right: SchedulePeriod): boolean {
  return (
    left.days.some((day) => right.days.includes(day)) &&
    minutesOf(left.start) < minutesOf(right.end) &&
    minutesOf(right.start) < minutesOf(left.end)
  );
}

/**
 * Checks a schedule as written in a spec file or assembled from flags, and returns it with defaults filled in.
 * Days may be a list (`[mon, tue]`) or a string (`"mon-fri"`, `"sat,sun"`); a buffer a number or a percentage
 * string (`"30%"`). Periods may not overlap, nor have two the same name.
 *
 * @example
 * ```ts
 * parsePoolSchedule({
 *   timeZone: 'Europe/Berlin',
 *   periods: [{ name: 'peak', days: 'mon-fri', start: '09:00', end: '17:00', buffer: '30%', min: 3, max: 20 }],
 * });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` naming the field (`details.field`) and what to write instead.
 * @category schedules
 */
export function parsePoolSchedule(raw: unknown): PoolSchedule {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalid('schedule', 'A schedule is a mapping with timeZone and periods.');
  }
  const { timeZone, periods, ...rest } = raw as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw invalid(
      unknown,
      `A schedule has the unknown field "${unknown}"; its fields are timeZone and periods.`,
    );
  }
  if (typeof timeZone !== 'string' || !isKnownTimeZone(timeZone)) {
    throw invalid(
      'timeZone',
      `timeZone ${JSON.stringify(timeZone)} is not an IANA time zone; write one such as "Europe/Berlin" or "America/New_York".`,
    );
  }
  if (!Array.isArray(periods) || periods.length === 0 || periods.length > 50) {
    throw invalid('periods', 'A schedule needs 1 to 50 periods.');
  }
  const parsed = periods.map(parsePeriod);
  for (const [at, period] of parsed.entries()) {
    const other = parsed
      .slice(0, at)
      .find((earlier) => earlier.name === period.name || overlaps(earlier, period));
    if (other) {
      throw invalid(
        `periods[${at}]`,
        other.name === period.name
          ? `Two periods are named "${period.name}"; give each its own name.`
          : `Period "${period.name}" overlaps period "${other.name}"; a moment belongs to one period at most.`,
      );
    }
  }
  return { timeZone, periods: parsed };
}

/**
 * Reads one period as the `--period` flag writes it: a name, days, a time range, then `buffer N|P%`, `min N`,
 * `max N` and optionally `to-zero`, such as `peak mon-fri 09:00-17:00 buffer 30% min 3 max 20`.
 *
 * @throws {@link VdiError} `INVALID_INPUT` saying what to write.
 * @category schedules
 */
export function parsePeriodFlag(text: string): Record<string, unknown> {
  const words = text.trim().split(/\s+/);
  const [name, days, range, ...rest] = words;
  const times = /^(\d\d:\d\d)-(\d\d:\d\d)$/.exec(range ?? '');
  if (name === undefined || days === undefined || !times) {
    throw invalid(
      'period',
      `--period "${text}" is not NAME DAYS HH:MM-HH:MM buffer N|P% min N max N [to-zero], such as "peak mon-fri 09:00-17:00 buffer 30% min 3 max 20".`,
    );
  }
  const period: Record<string, unknown> = { name, days, start: times[1], end: times[2] };
  for (let at = 0; at < rest.length; at += 1) {
    const word = rest[at];
    if (word === 'to-zero') {
      period.scaleToZero = true;
      continue;
    }
    const value = rest[at + 1];
    if ((word !== 'buffer' && word !== 'min' && word !== 'max') || value === undefined) {
      throw invalid('period', `--period "${text}" has "${word}" where buffer, min, max or to-zero goes.`);
    }
    period[word] = word === 'buffer' ? value : Number(value);
    at += 1;
  }
  return period;
}

/** A period in the words of the `--period` flag, for status lines. @category schedules */
export function formatPeriod(period: SchedulePeriod): string {
  const buffer = 'count' in period.buffer ? String(period.buffer.count) : `${period.buffer.percent}%`;
  const days = period.days.join(',');
  return `${period.name} ${days} ${period.start}-${period.end} buffer ${buffer} min ${period.min} max ${period.max}${period.scaleToZero ? ' to-zero' : ''}`;
}
