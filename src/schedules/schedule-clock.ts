import { minutesOf, type PoolSchedule, type SchedulePeriod, type Weekday } from '../pool-schedule.js';

const minuteMs = 60_000;
// far enough to find the next change of any weekly schedule
const horizonMinutes = 8 * 24 * 60;
// the longest step of the search: a daylight saving change moves the wall clock within one step at most
const longestStepMinutes = 15;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/**
 * The wall clock of a time zone at an instant: the day of the week and the minutes since midnight, as `Intl` (the
 * runtime's copy of the IANA database) tells them, daylight saving included.
 *
 * @category schedules
 */
export function wallClockAt(timeZone: string, at: Date): { day: Weekday; minutes: number } {
  let day = 'mon';
  let hour = 0;
  let minute = 0;
  for (const part of formatterFor(timeZone).formatToParts(at)) {
    if (part.type === 'weekday') day = part.value.toLowerCase();
    else if (part.type === 'hour') hour = Number(part.value);
    else if (part.type === 'minute') minute = Number(part.value);
  }
  return { day: day as Weekday, minutes: hour * 60 + minute };
}

/**
 * The period of a schedule in force at an instant, judged by the wall clock of its time zone, or `undefined`
 * outside every period. On the day daylight saving begins, a period whose start falls into the skipped hour begins
 * when the clock jumps; in the hour repeated when it ends, the wall clock (and so the period) is as it reads.
 *
 * @category schedules
 */
export function periodAt(schedule: PoolSchedule, at: Date): SchedulePeriod | undefined {
  const { day, minutes } = wallClockAt(schedule.timeZone, at);
  return schedule.periods.find(
    (period) =>
      period.days.includes(day) && minutesOf(period.start) <= minutes && minutes < minutesOf(period.end),
  );
}

// minutes until the wall clock next reaches a period's start or end, or midnight
function minutesToBoundary(schedule: PoolSchedule, at: Date): number {
  const { minutes } = wallClockAt(schedule.timeZone, at);
  const boundaries = schedule.periods.flatMap((period) => [minutesOf(period.start), minutesOf(period.end)]);
  const next = Math.min(1440, ...boundaries.filter((boundary) => boundary > minutes));
  return next - minutes;
}

/**
 * When the period in force next changes after `at` (a period begins or ends), and the period from then on; a
 * schedule whose periods never change from now on gives `undefined`. Changes fall on whole minutes.
 *
 * @example
 * ```ts
 * const next = nextScheduleChange(schedule, clock.now());
 * console.log(`${next?.period?.name ?? 'off hours'} from ${next?.at.toISOString()}`);
 * ```
 * @category schedules
 */
export function nextScheduleChange(
  schedule: PoolSchedule,
  at: Date,
): { at: Date; period: SchedulePeriod | undefined } | undefined {
  const now = periodAt(schedule, at);
  let from = new Date(Math.floor(at.getTime() / minuteMs) * minuteMs);
  for (let searched = 0; searched < horizonMinutes; ) {
    const step = Math.max(1, Math.min(longestStepMinutes, minutesToBoundary(schedule, from)));
    const to = new Date(from.getTime() + step * minuteMs);
    if (periodAt(schedule, to) !== now) {
      // a clock change may have moved the wall clock past a boundary within the step: find its first minute
      for (let minute = 1; minute <= step; minute += 1) {
        const candidate = new Date(from.getTime() + minute * minuteMs);
        const period = periodAt(schedule, candidate);
        if (period !== now) return { at: candidate, period };
      }
    }
    from = to;
    searched += step;
  }
  return undefined;
}

/**
 * The periods that begin within `withinMs` after `at`, each with its start, in order: what the keeper warms ahead
 * for.
 *
 * @category schedules
 */
export function periodsStartingWithin(
  schedule: PoolSchedule,
  at: Date,
  withinMs: number,
): Array<{ at: Date; period: SchedulePeriod }> {
  const starting: Array<{ at: Date; period: SchedulePeriod }> = [];
  let from = at;
  for (;;) {
    const next = nextScheduleChange(schedule, from);
    if (!next || next.at.getTime() - at.getTime() > withinMs) return starting;
    if (next.period) starting.push({ at: next.at, period: next.period });
    from = next.at;
  }
}
