import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { leasePoolLabel } from '../../../src/keys.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { parsePoolSchedule } from '../../../src/pool-schedule.js';
import {
  planScheduleScaling,
  planScheduleTargets,
  retryAt,
  scheduleSettleMs,
} from '../../../src/schedules/plan-schedule.js';

const schedule = parsePoolSchedule({
  timeZone: 'UTC',
  periods: [
    { name: 'ramp-up', days: 'mon-fri', start: '07:00', end: '09:00', buffer: 2, min: 2, max: 10 },
    { name: 'peak', days: 'mon-fri', start: '09:00', end: '17:00', buffer: '30%', min: 3, max: 10 },
    {
      name: 'quiet',
      days: 'sat',
      start: '09:00',
      end: '17:00',
      buffer: '50%',
      min: 0,
      max: 4,
      scaleToZero: true,
    },
  ],
});
const plain = { size: 2, minReady: 0 };
// Monday 2 March 2026
const at = (time: string) => new Date(`2026-03-02T${time}:00Z`);

describe('planScheduleTargets', () => {
  it.each([
    ['at night the plain settings hold', '03:00', 0, 0, { period: undefined, size: 2, freeRunning: 0 }],
    [
      'warms ahead of ramp-up within the lead',
      '06:50',
      0,
      0,
      { warmingFor: 'ramp-up', size: 2, freeRunning: 2 },
    ],
    ['keeps the ramp-up buffer', '07:30', 1, 0, { period: 'ramp-up', size: 3, freeRunning: 2 }],
    [
      'keeps 30 % of the claimed free at peak, rounded up',
      '10:00',
      7,
      0,
      { period: 'peak', size: 10, freeRunning: 3 },
    ],
    ['stops at the period cap', '10:00', 9, 0, { size: 10, freeRunning: 1 }],
    [
      'keeps one free running at least unless the period may scale to zero',
      '10:00',
      0,
      0,
      { size: 3, freeRunning: 1 },
    ],
    ['counts waiters as demand', '07:30', 1, 3, { size: 6, freeRunning: 5 }],
  ])('%s', (_, time, claimed, waiters, expected) => {
    expect(planScheduleTargets({ schedule, plain, claimed, waiters, now: at(time) })).toMatchObject(expected);
  });

  it('lets a period that may scale to zero keep no free member for no claims', () => {
    const saturday = new Date('2026-03-07T10:00:00Z');
    expect(planScheduleTargets({ schedule, plain, claimed: 0, waiters: 0, now: saturday })).toMatchObject({
      period: 'quiet',
      size: 0,
      freeRunning: 0,
    });
  });

  it('names the next change', () => {
    expect(
      planScheduleTargets({ schedule, plain, claimed: 0, waiters: 0, now: at('16:59') }).nextChange,
    ).toEqual({
      at: at('17:00'),
      period: undefined,
    });
  });

  it('never aims below the claimed members in a period, nor above the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 24 * 60 - 1 }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 0, max: 5 }),
        (minute, claimed, waiters) => {
          const now = new Date(at('00:00').getTime() + minute * 60_000);
          const targets = planScheduleTargets({ schedule, plain, claimed, waiters, now });
          expect(targets.freeRunning).toBeGreaterThanOrEqual(0);
          expect(targets.freeRunning).toBeLessThanOrEqual(Math.max(targets.size - claimed, plain.minReady));
          if (targets.period !== undefined) expect(targets.size).toBeLessThanOrEqual(10);
        },
      ),
    );
  });
});

function member(name: string, power: MemberFacts['power'] = 'stopped'): MemberFacts {
  return {
    kind: 'vm',
    namespace: 'ns',
    member: name,
    pool: 'devpool',
    desktopId: `vm/ns/${name}`,
    uid: name,
    resourceVersion: '1',
    deleting: false,
    power,
    phase: power === 'running' ? 'Running' : 'Stopped',
    address: undefined,
    node: undefined,
    consoles: [],
    devices: [],
    ephemeral: false,
    source: 'golden',
    presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
    previousInstance: false,
    usesLegacyRunField: false,
  };
}

function claimOf(name: string, now: Date): LeaseObject {
  return {
    metadata: { name: `corral-vdi-${name}`, resourceVersion: '1', labels: { [leasePoolLabel]: 'devpool' } },
    spec: {
      holderIdentity: 'alice',
      acquireTime: now.toISOString(),
      renewTime: now.toISOString(),
      leaseDurationSeconds: 3600,
    },
  };
}

describe('planScheduleScaling', () => {
  const now = at('18:00');
  const settled = new Date(now.getTime() - scheduleSettleMs);
  const members = ['devpool-1', 'devpool-2', 'devpool-3', 'devpool-4'].map((name, index) =>
    member(name, index === 1 ? 'running' : 'stopped'),
  );

  it('removes only members free for the settle time, stopped first then the highest, never a claimed one', () => {
    const plan = planScheduleScaling({
      targets: { size: 1, freeRunning: 0 },
      members,
      leases: [claimOf('devpool-1', now)],
      freeSince: new Map([
        ['devpool-2', settled],
        ['devpool-3', new Date(now.getTime() - 60_000)],
        ['devpool-4', settled],
      ]),
      now,
    });
    expect(plan).toEqual({
      grow: 0,
      remove: ['devpool-4', 'devpool-2'],
      waiting: 1,
      markFree: [],
      unmarkFree: [],
    });
  });

  it('keeps the running free members the target keeps warm', () => {
    const plan = planScheduleScaling({
      targets: { size: 1, freeRunning: 1 },
      members,
      leases: [claimOf('devpool-1', now)],
      freeSince: new Map([
        ['devpool-2', settled],
        ['devpool-4', settled],
      ]),
      now,
    });
    expect(plan.remove).toEqual(['devpool-4']);
  });

  it('grows to the target, and marks newly free and newly claimed members', () => {
    const plan = planScheduleScaling({
      targets: { size: 6, freeRunning: 0 },
      members,
      leases: [claimOf('devpool-2', now)],
      freeSince: new Map([['devpool-2', settled]]),
      now,
    });
    expect(plan).toMatchObject({
      grow: 2,
      remove: [],
      markFree: ['devpool-1', 'devpool-3', 'devpool-4'],
      unmarkFree: ['devpool-2'],
    });
  });

  it('backs off from 30 s, doubling up to 10 minutes', () => {
    expect([1, 2, 3, 10].map((attempts) => retryAt(now, attempts).getTime() - now.getTime())).toEqual([
      30_000, 60_000, 120_000, 600_000,
    ]);
  });
});
