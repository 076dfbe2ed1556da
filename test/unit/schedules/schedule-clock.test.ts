import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { parsePeriodFlag, parsePoolSchedule } from '../../../src/pool-schedule.js';
import { nextScheduleChange, periodAt, wallClockAt } from '../../../src/schedules/schedule-clock.js';

const berlin = parsePoolSchedule({
  timeZone: 'Europe/Berlin',
  periods: [
    { name: 'ramp-up', days: 'mon-fri', start: '07:00', end: '09:00', buffer: 2, min: 2, max: 10 },
    { name: 'peak', days: 'mon-fri', start: '09:00', end: '17:00', buffer: '30%', min: 3, max: 10 },
    { name: 'early', days: ['sun'], start: '02:30', end: '04:00', buffer: 1, min: 1, max: 2 },
  ],
});
const utc = (text: string) => new Date(`${text}Z`);

describe('the wall clock of a schedule', () => {
  it('follows Berlin across the start of daylight saving', () => {
    // Friday 27 March 2026 is still CET (UTC+1); Monday 30 March is CEST (UTC+2)
    expect(wallClockAt('Europe/Berlin', utc('2026-03-27T08:00:00'))).toEqual({ day: 'fri', minutes: 9 * 60 });
    expect(wallClockAt('Europe/Berlin', utc('2026-03-30T07:00:00'))).toEqual({ day: 'mon', minutes: 9 * 60 });
    expect(periodAt(berlin, utc('2026-03-27T08:00:00'))?.name).toBe('peak');
    expect(periodAt(berlin, utc('2026-03-30T06:59:00'))?.name).toBe('ramp-up');
    expect(periodAt(berlin, utc('2026-03-30T07:00:00'))?.name).toBe('peak');
    expect(periodAt(berlin, utc('2026-03-28T10:00:00'))).toBeUndefined();
  });

  it('finds the next change over a weekend and a clock change, on the minute', () => {
    const after = nextScheduleChange(berlin, utc('2026-03-27T16:30:12'));
    // the Sunday period first: 02:30 does not exist that night, so it begins when the clock jumps to 03:00
    expect(after).toEqual({ at: utc('2026-03-29T01:00:00'), period: berlin.periods[2] });
    expect(nextScheduleChange(berlin, after!.at)).toEqual({
      at: utc('2026-03-29T02:00:00'),
      period: undefined,
    });
    // Monday's ramp-up at 07:00 CEST is 05:00 UTC
    expect(nextScheduleChange(berlin, utc('2026-03-29T02:00:00'))).toEqual({
      at: utc('2026-03-30T05:00:00'),
      period: berlin.periods[0],
    });
  });

  it('reads the repeated hour at the end of daylight saving as the wall clock shows it', () => {
    // 25 October 2026: 03:00 CEST goes back to 02:00 CET, so the wall clock reads 02:00 to 02:59 twice
    const changes = [];
    let from = utc('2026-10-24T23:00:00');
    for (let count = 0; count < 4; count += 1) {
      const next = nextScheduleChange(berlin, from);
      changes.push([next?.at.toISOString(), next?.period?.name]);
      from = next!.at;
    }
    expect(changes).toEqual([
      ['2026-10-25T00:30:00.000Z', 'early'], // 02:30 CEST
      ['2026-10-25T01:00:00.000Z', undefined], // back to 02:00 CET, before the start again
      ['2026-10-25T01:30:00.000Z', 'early'], // 02:30 CET
      ['2026-10-25T03:00:00.000Z', undefined], // 04:00 CET
    ]);
  });

  it('finds the first change: nothing changes before it, and the period differs from it on', () => {
    const start = utc('2026-01-01T00:00:00').getTime();
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 365 * 24 * 60 }),
        fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 5, maxLength: 5 }),
        (minute, samples) => {
          const at = new Date(start + minute * 60_000 + 17_000);
          const next = nextScheduleChange(berlin, at);
          expect(next).toBeDefined();
          const now = periodAt(berlin, at);
          expect(next!.period).not.toBe(now);
          expect(periodAt(berlin, next!.at)).toBe(next!.period);
          const gap = next!.at.getTime() - at.getTime();
          expect(gap).toBeGreaterThan(0);
          for (const sample of samples) {
            const between = new Date(at.getTime() + (sample % Math.max(1, gap - 1)));
            expect(periodAt(berlin, between)).toBe(now);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('parsePoolSchedule', () => {
  it('reads days as a list or a range, buffers as counts or percentages, and fills scaleToZero', () => {
    expect(berlin.periods[1]).toEqual({
      name: 'peak',
      days: ['mon', 'tue', 'wed', 'thu', 'fri'],
      start: '09:00',
      end: '17:00',
      buffer: { percent: 30 },
      min: 3,
      max: 10,
      scaleToZero: false,
    });
    expect(
      parsePoolSchedule({
        timeZone: 'UTC',
        periods: [parsePeriodFlag('night sat,sun 00:00-24:00 buffer 0 max 1 to-zero')],
      }).periods[0],
    ).toMatchObject({
      days: ['sat', 'sun'],
      buffer: { count: 0 },
      min: 0,
      max: 1,
      scaleToZero: true,
    });
  });

  it.each([
    ['an unknown zone', { timeZone: 'Mars/Olympus', periods: [] }, 'timeZone'],
    ['no periods', { timeZone: 'UTC', periods: [] }, 'periods'],
    [
      'an end before the start',
      {
        timeZone: 'UTC',
        periods: [{ name: 'a', days: 'mon', start: '17:00', end: '09:00', buffer: 1, max: 2 }],
      },
      'periods[0].end',
    ],
    [
      'a max below the min',
      {
        timeZone: 'UTC',
        periods: [{ name: 'a', days: 'mon', start: '09:00', end: '10:00', buffer: 1, min: 5, max: 2 }],
      },
      'periods[0].max',
    ],
    [
      'a buffer over 100 %',
      {
        timeZone: 'UTC',
        periods: [{ name: 'a', days: 'mon', start: '09:00', end: '10:00', buffer: '150%', max: 2 }],
      },
      'periods[0].buffer',
    ],
    [
      'a typo in a field',
      {
        timeZone: 'UTC',
        periods: [{ name: 'a', days: 'mon', start: '09:00', end: '10:00', bufer: 1, max: 2 }],
      },
      'periods[0].bufer',
    ],
    [
      'overlapping periods',
      {
        timeZone: 'UTC',
        periods: [
          { name: 'a', days: 'mon-fri', start: '09:00', end: '12:00', buffer: 1, max: 2 },
          { name: 'b', days: 'fri', start: '11:00', end: '13:00', buffer: 1, max: 2 },
        ],
      },
      'periods[1]',
    ],
  ])('refuses %s, naming the field', (_, raw, field) => {
    let caught: unknown;
    try {
      parsePoolSchedule(raw);
    } catch (error) {
      caught = error;
    }
    expect(isVdiError(caught, 'INVALID_INPUT')).toBe(true);
    expect((caught as { details: { field: string } }).details.field).toBe(field);
  });
});
