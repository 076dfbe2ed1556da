import { describe, expect, it } from 'vitest';
import { poolStatusLines } from '../../../src/cli/pool-text.js';
import { parsePoolSchedule } from '../../../src/pool-schedule.js';
import { describePoolPlans } from '../../../src/pool-status/describe-pool-plans.js';
import { describePoolStatus } from '../../../src/pool-status/pool-status.js';
import { readMinReady } from '../../../src/spares/min-ready.js';
import { leaseOf, member, now } from '../claims/member-fixtures.js';

const at = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString();

function withMarks(name: string, holder: string, marks: Record<string, string>) {
  const lease = leaseOf(name, { holder });
  lease.metadata.annotations = { ...lease.metadata.annotations, ...marks };
  return lease;
}

describe('describePoolStatus', () => {
  const status = describePoolStatus({
    kind: 'vm',
    namespace: 'corral-vms',
    pool: 'devpool',
    members: [
      member('devpool-10', { power: 'running' }),
      member('devpool-1', { power: 'running', holder: 'alice' }),
      member('devpool-2', { power: 'running', holder: 'bob' }),
      member('devpool-3', { power: 'running' }),
      member('devpool-4', { power: 'stopped', holder: 'carol' }),
      member('devpool-5', { power: 'running', holder: 'dave' }),
      member('devpool-6', {}),
    ],
    leases: [
      withMarks('devpool-1', 'alice', { 'corral.dev/vdi-connected-at': at(5) }),
      withMarks('devpool-2', 'bob', {
        'corral.dev/vdi-connected-at': at(10),
        'corral.dev/vdi-disconnected-at': at(2),
      }),
      leaseOf('devpool-4', { holder: 'carol' }),
      withMarks('devpool-5', 'dave', { 'corral.dev/vdi-releasing': 's' }),
    ],
    marked: new Set(['devpool-3']),
    minReady: 3,
    waiters: 2,
    now,
  });

  it('tells each member’s holder, session and whether it is warm or a spare, in natural order', () => {
    expect(
      status.members.map((entry) => [entry.name, entry.holder, entry.session, entry.warm, entry.spare]),
    ).toEqual([
      ['devpool-1', 'alice', 'connected', false, false],
      ['devpool-2', 'bob', 'disconnected', false, false],
      ['devpool-3', null, 'none', true, true],
      ['devpool-4', 'carol', 'claimed', false, false],
      ['devpool-5', 'dave', 'releasing', false, false],
      ['devpool-6', null, 'none', false, false],
      ['devpool-10', null, 'none', true, false],
    ]);
  });

  it('counts the warm members against minReady, and the waiters', () => {
    expect(status).toMatchObject({ id: 'vm/corral-vms/devpool', minReady: 3, warm: 2, short: 1, waiters: 2 });
  });

  it('prints a header and one row per member', () => {
    const lines = poolStatusLines(status);
    expect(lines[0]).toBe('devpool  (vm, ns/corral-vms, 7 members)  2/3 warm (1 short)  waiters 2');
    expect(lines[1]).toMatch(/^MEMBER\s+HOLDER\s+PHASE\s+SESSION\s+WARM$/);
    expect(lines[4]).toMatch(/^devpool-3\s+free\s+Running\s+-\s+spare$/);
    expect(lines[8]).toMatch(/^devpool-10\s+free\s+Running\s+-\s+warm$/);
  });
});

describe('describePoolStatus of a pool that lets only some groups in', () => {
  const status = describePoolStatus({
    kind: 'vm',
    namespace: 'corral-vms',
    pool: 'gpu',
    members: [
      member('gpu-1', { power: 'running', holder: 'alice' }),
      member('gpu-2', { power: 'running', holder: 'bob' }),
      member('gpu-3', { power: 'running', holder: 'dave' }),
      member('gpu-4', { power: 'stopped' }),
    ],
    leases: [
      withMarks('gpu-1', 'alice', {
        'corral.dev/vdi-holder-groups': '["ml"]',
        'corral.dev/vdi-not-entitled-at': at(3),
      }),
      withMarks('gpu-2', 'bob', { 'corral.dev/vdi-holder-groups': '["research"]' }),
      withMarks('gpu-3', 'dave', { 'corral.dev/vdi-holder-groups': 'unchecked' }),
    ],
    marked: new Set(),
    minReady: undefined,
    waiters: 0,
    now,
    entitlement: { poolId: 'vm/corral-vms/gpu', allowedGroups: ['research'] },
  });

  it('marks each claim whose holder the pool no longer lets in, with the pass’s mark, and never an assign', () => {
    expect(status.members.map((entry) => [entry.name, entry.entitlement, entry.notEntitledAt])).toEqual([
      ['gpu-1', 'not-entitled', at(3)],
      ['gpu-2', 'entitled', null],
      ['gpu-3', 'unchecked', null],
      ['gpu-4', null, null],
    ]);
    expect(poolStatusLines(status)[2]).toMatch(/^gpu-1\s+alice \(not entitled\)\s+Running/);
  });
});

describe('readMinReady', () => {
  const vm = (value?: string) => ({
    metadata: value === undefined ? {} : { annotations: { 'corral.dev/vdi-min-ready': value } },
  });

  it('takes the largest value the members carry, so a setting written part way never leaves a pool short', () => {
    expect(readMinReady([vm('1'), vm(), vm('3')])).toBe(3);
  });

  it('reads no setting from members without one or with an unreadable one', () => {
    expect(readMinReady([vm(), vm('-2'), vm('lots')])).toBeUndefined();
  });
});

describe('describePoolPlans', () => {
  // a weekend that may go down to no member at all
  const schedule = parsePoolSchedule({
    timeZone: 'UTC',
    periods: [
      {
        name: 'weekend',
        days: 'mon-sun',
        start: '00:00',
        end: '24:00',
        buffer: 0,
        min: 0,
        max: 3,
        scaleToZero: true,
      },
    ],
  });
  const plansOf = (fewestMembers: number | undefined) =>
    describePoolPlans({
      kind: 'ct',
      pool: 'devbox',
      facts: {
        members: [],
        leases: [],
        minReady: undefined,
        fewestMembers,
        settings: { schedule, plainSize: 1 },
      },
      now,
    }).schedule?.targets;

  it('shows the size a period that scales to zero aims at, down to the fewest members the kind keeps', () => {
    expect(plansOf(0)).toEqual({ size: 0, freeRunning: 0 });
    // a VM pool is its members: it keeps one
    expect(plansOf(undefined)).toEqual({ size: 1, freeRunning: 0 });
  });
});
