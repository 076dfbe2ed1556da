import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import {
  checkReclaimPolicy,
  defaultReclaimPolicy,
  describeSession,
  planReclaim,
  type ReclaimPolicy,
  type SessionFacts,
} from '../../../src/sessions/plan-reclaim.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);

// claimed at 0, this process started at -60 unless a row says otherwise
function facts(overrides: Partial<SessionFacts> = {}): SessionFacts {
  return { acquiredAt: at(0), consoleOpen: false, processStartedAt: at(-60), ...overrides };
}

const grace15: ReclaimPolicy = { disconnectGraceMs: 15 * minute, maxSessionMs: 0 };
const grace15max8h: ReclaimPolicy = { disconnectGraceMs: 15 * minute, maxSessionMs: 480 * minute };

describe('planReclaim', () => {
  it.each<[string, Partial<SessionFacts>, ReclaimPolicy, number, ReturnType<typeof planReclaim>]>([
    ['keeps a desktop that never had a console, whatever its age', {}, grace15, 10_000, { kind: 'keep' }],
    [
      'keeps a desktop with an open console',
      { connectedAt: at(1), consoleOpen: true },
      grace15,
      500,
      { kind: 'keep' },
    ],
    [
      'keeps a disconnected desktop within its grace and says when it goes',
      { connectedAt: at(1), disconnectedAt: at(10) },
      grace15,
      24,
      { kind: 'keep', reclaimAt: at(25), reclaimReason: 'disconnect-grace' },
    ],
    [
      'reclaims a disconnected desktop when its grace ends',
      { connectedAt: at(1), disconnectedAt: at(10) },
      grace15,
      25,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'reclaims a disconnected desktop after its grace',
      { connectedAt: at(1), disconnectedAt: at(10) },
      grace15,
      90,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'counts the grace from the latest disconnect after a reconnect',
      { connectedAt: at(20), disconnectedAt: at(30) },
      grace15,
      40,
      { kind: 'keep', reclaimAt: at(45), reclaimReason: 'disconnect-grace' },
    ],
    [
      'turns disconnect reclaim off with a grace of 0',
      { connectedAt: at(1), disconnectedAt: at(2) },
      { disconnectGraceMs: 0, maxSessionMs: 0 },
      10_000,
      { kind: 'keep' },
    ],
    [
      'reclaims at the maximum age although a console is open',
      { connectedAt: at(1), consoleOpen: true },
      grace15max8h,
      480,
      { kind: 'reclaim', reason: 'max-duration' },
    ],
    [
      'shows the maximum age as the pending reclaim while a console is open',
      { connectedAt: at(1), consoleOpen: true },
      grace15max8h,
      100,
      { kind: 'keep', reclaimAt: at(480), reclaimReason: 'max-duration' },
    ],
    [
      'reclaims a desktop that never had a console at the maximum age',
      {},
      grace15max8h,
      480,
      { kind: 'reclaim', reason: 'max-duration' },
    ],
    [
      'names the earlier reclaim when the grace ends first',
      { connectedAt: at(1), disconnectedAt: at(400) },
      grace15max8h,
      300,
      { kind: 'keep', reclaimAt: at(415), reclaimReason: 'disconnect-grace' },
    ],
    [
      'names the earlier reclaim when the maximum age comes first',
      { connectedAt: at(1), disconnectedAt: at(470) },
      grace15max8h,
      475,
      { kind: 'keep', reclaimAt: at(480), reclaimReason: 'max-duration' },
    ],
    [
      'names the maximum age on a tie',
      { connectedAt: at(1), disconnectedAt: at(465) },
      grace15max8h,
      480,
      { kind: 'reclaim', reason: 'max-duration' },
    ],
    [
      'gives a desktop connected when the previous process stopped a full grace from this start',
      { connectedAt: at(5), processStartedAt: at(100) },
      grace15,
      114,
      { kind: 'keep', reclaimAt: at(115), reclaimReason: 'disconnect-grace' },
    ],
    [
      'reclaims such a desktop once the grace from this start ends',
      { connectedAt: at(5), processStartedAt: at(100) },
      grace15,
      115,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'treats a reconnect before the restart as connected at the restart',
      { connectedAt: at(50), disconnectedAt: at(20), processStartedAt: at(100) },
      grace15,
      110,
      { kind: 'keep', reclaimAt: at(115), reclaimReason: 'disconnect-grace' },
    ],
    [
      'keeps the recorded time of a desktop already disconnected before the restart',
      { connectedAt: at(5), disconnectedAt: at(90), processStartedAt: at(100) },
      grace15,
      105,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'reads marks of the same instant as disconnected',
      { connectedAt: at(10), disconnectedAt: at(10), processStartedAt: at(100) },
      grace15,
      101,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'counts from a connect after this start when the disconnect mark was not written',
      { connectedAt: at(200), processStartedAt: at(100) },
      grace15,
      210,
      { kind: 'keep', reclaimAt: at(215), reclaimReason: 'disconnect-grace' },
    ],
    [
      'ignores marks left from an earlier claim of the member',
      { acquiredAt: at(100), connectedAt: at(1), disconnectedAt: at(2) },
      grace15,
      10_000,
      { kind: 'keep' },
    ],
    [
      'reads a disconnect mark without a connect mark as a disconnect',
      { disconnectedAt: at(10) },
      grace15,
      25,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'runs the grace from the expiry of a dead replica’s console entries',
      { connectedAt: at(1), consolesLostAt: at(4) },
      grace15,
      18,
      { kind: 'keep', reclaimAt: at(19), reclaimReason: 'disconnect-grace' },
    ],
    [
      'reclaims once the grace from a dead replica’s expiry ends',
      { connectedAt: at(1), consolesLostAt: at(4) },
      grace15,
      19,
      { kind: 'reclaim', reason: 'disconnect-grace' },
    ],
    [
      'keeps a desktop with a console open in a live replica whatever a dead one left',
      { connectedAt: at(1), consolesLostAt: at(4), consoleOpen: true },
      grace15,
      500,
      { kind: 'keep' },
    ],
    [
      'counts a dead replica’s grace from this start when this process started later',
      { connectedAt: at(1), consolesLostAt: at(4), processStartedAt: at(30) },
      grace15,
      44,
      { kind: 'keep', reclaimAt: at(45), reclaimReason: 'disconnect-grace' },
    ],
    [
      'keeps a disconnect recorded after a dead replica’s entries expired',
      { connectedAt: at(1), consolesLostAt: at(4), disconnectedAt: at(6) },
      grace15,
      20,
      { kind: 'keep', reclaimAt: at(21), reclaimReason: 'disconnect-grace' },
    ],
    [
      'runs the grace from a dead replica’s expiry after the last recorded disconnect',
      { connectedAt: at(1), disconnectedAt: at(2), consolesLostAt: at(10) },
      grace15,
      24,
      { kind: 'keep', reclaimAt: at(25), reclaimReason: 'disconnect-grace' },
    ],
    [
      'ignores console entries that expired before the claim began',
      { acquiredAt: at(100), consolesLostAt: at(99) },
      grace15,
      10_000,
      { kind: 'keep' },
    ],
    [
      'never reclaims when the maximum age lies beyond what a Date holds',
      {},
      { disconnectGraceMs: 0, maxSessionMs: Number.MAX_SAFE_INTEGER },
      1_000_000,
      { kind: 'keep' },
    ],
  ])('%s', (_name, overrides, policy, nowMinutes, expected) => {
    expect(planReclaim(facts(overrides), at(nowMinutes), policy)).toEqual(expected);
  });

  it('has a default policy of 15 minutes grace and no maximum age', () => {
    expect(defaultReclaimPolicy).toEqual({ disconnectGraceMs: 900_000, maxSessionMs: 0 });
  });

  it.each<[string, SessionFacts, Date, ReclaimPolicy]>([
    ['an invalid now', facts(), new Date(Number.NaN), grace15],
    ['an invalid acquiredAt', facts({ acquiredAt: new Date('nope') }), at(0), grace15],
    ['an invalid connectedAt', facts({ connectedAt: new Date(Number.NaN) }), at(0), grace15],
    ['an invalid disconnectedAt', facts({ disconnectedAt: new Date(Number.NaN) }), at(0), grace15],
    ['an invalid processStartedAt', facts({ processStartedAt: new Date(Number.NaN) }), at(0), grace15],
    ['an invalid consolesLostAt', facts({ consolesLostAt: new Date(Number.NaN) }), at(0), grace15],
    [
      'a consoleOpen that is not a boolean',
      { ...facts(), consoleOpen: 1 as unknown as boolean },
      at(0),
      grace15,
    ],
    ['a negative grace', facts(), at(0), { disconnectGraceMs: -1, maxSessionMs: 0 }],
    ['a fractional maximum', facts(), at(0), { disconnectGraceMs: 0, maxSessionMs: 1.5 }],
    ['a maximum that is not a number', facts(), at(0), { disconnectGraceMs: 0, maxSessionMs: Number.NaN }],
  ])('rejects %s with INVALID_INPUT', (_name, badFacts, now, policy) => {
    expect(() => planReclaim(badFacts, now, policy)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });
});

const time = fc.integer({ min: -10_000, max: 10_000 }).map((minutes) => at(minutes));
const arbitraryFacts = fc.record({
  acquiredAt: time,
  connectedAt: fc.option(time, { nil: undefined }),
  disconnectedAt: fc.option(time, { nil: undefined }),
  consoleOpen: fc.boolean(),
  processStartedAt: time,
});
const arbitraryPolicy = fc.record({
  disconnectGraceMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 * minute })),
  maxSessionMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1000 * minute })),
});

describe('planReclaim properties', () => {
  it('never reclaims by grace while a console is open', () => {
    fc.assert(
      fc.property(arbitraryFacts, time, arbitraryPolicy, (desktop, now, policy) => {
        const plan = planReclaim({ ...desktop, consoleOpen: true }, now, policy);
        expect(plan.kind === 'reclaim' ? plan.reason : plan.reclaimReason).not.toBe('disconnect-grace');
      }),
    );
  });

  it('never reclaims by grace a desktop that never had a console', () => {
    fc.assert(
      fc.property(arbitraryFacts, time, arbitraryPolicy, (desktop, now, policy) => {
        const plan = planReclaim(
          { ...desktop, connectedAt: undefined, disconnectedAt: undefined },
          now,
          policy,
        );
        expect(plan.kind === 'reclaim' ? plan.reason : plan.reclaimReason).not.toBe('disconnect-grace');
      }),
    );
  });

  it('keeps a desktop before its reclaimAt and reclaims it from then on, for the same reason', () => {
    fc.assert(
      fc.property(
        arbitraryFacts,
        time,
        arbitraryPolicy,
        fc.integer({ min: 0, max: 100_000 * minute }),
        (desktop, now, policy, step) => {
          const plan = planReclaim(desktop, now, policy);
          if (plan.kind !== 'keep' || plan.reclaimAt === undefined) return;
          const reclaimAt = plan.reclaimAt.getTime();
          expect(reclaimAt).toBeGreaterThan(now.getTime());
          expect(planReclaim(desktop, new Date(reclaimAt - 1), policy).kind).toBe('keep');
          expect(planReclaim(desktop, new Date(reclaimAt + step), policy)).toEqual({
            kind: 'reclaim',
            reason: plan.reclaimReason,
          });
        },
      ),
    );
  });

  it('once it reclaims a desktop, reclaims it at every later time', () => {
    fc.assert(
      fc.property(
        arbitraryFacts,
        time,
        arbitraryPolicy,
        fc.nat(100_000 * minute),
        (desktop, now, policy, step) => {
          const plan = planReclaim(desktop, now, policy);
          if (plan.kind === 'reclaim')
            expect(planReclaim(desktop, new Date(now.getTime() + step), policy)).toEqual(plan);
        },
      ),
    );
  });

  it('never reclaims at once only because the process restarted', () => {
    fc.assert(
      fc.property(
        arbitraryFacts,
        arbitraryPolicy.filter((policy) => policy.disconnectGraceMs > 0),
        fc.integer({ min: 1, max: 10_000 * minute }),
        fc.nat(),
        (desktop, policy, restartAfterMs, sinceStartSeed) => {
          // the desktop was connected when the previous process stopped, and the claim is not yet too old
          const connectedAt = desktop.connectedAt ?? desktop.acquiredAt;
          const processStartedAt = new Date(connectedAt.getTime() + restartAfterMs);
          const sinceStart = sinceStartSeed % policy.disconnectGraceMs;
          const now = new Date(processStartedAt.getTime() + sinceStart);
          const maxAt = desktop.acquiredAt.getTime() + policy.maxSessionMs;
          fc.pre(policy.maxSessionMs === 0 || now.getTime() < maxAt);
          const restarted = {
            ...desktop,
            connectedAt,
            disconnectedAt: undefined,
            consoleOpen: false,
            processStartedAt,
          };
          expect(planReclaim(restarted, now, policy).kind).toBe('keep');
        },
      ),
    );
  });

  it('never reclaims a desktop a dead replica served until a full grace after its entries expired, or after this start when later', () => {
    fc.assert(
      fc.property(
        arbitraryFacts,
        time,
        fc.integer({ min: 1, max: 1000 * minute }),
        fc.nat(),
        (desktop, consolesLostAt, grace, sinceSeed) => {
          const claimedAt = desktop.acquiredAt.getTime();
          fc.pre(consolesLostAt.getTime() >= claimedAt);
          fc.pre(desktop.disconnectedAt === undefined || desktop.disconnectedAt < consolesLostAt);
          // an entry is written with or after the connect mark of its period
          fc.pre(desktop.connectedAt === undefined || desktop.connectedAt <= consolesLostAt);
          const policy = { disconnectGraceMs: grace, maxSessionMs: 0 };
          const lost = { ...desktop, consoleOpen: false, consolesLostAt };
          const graceFrom = Math.max(consolesLostAt.getTime(), desktop.processStartedAt.getTime());
          expect(planReclaim(lost, new Date(graceFrom + (sinceSeed % grace)), policy).kind).toBe('keep');
          expect(planReclaim(lost, new Date(graceFrom + grace), policy)).toEqual({
            kind: 'reclaim',
            reason: 'disconnect-grace',
          });
        },
      ),
    );
  });

  it('keeps the recorded disconnect time across a restart', () => {
    fc.assert(
      fc.property(arbitraryFacts, time, arbitraryPolicy, time, (desktop, now, policy, processStartedAt) => {
        fc.pre(
          desktop.disconnectedAt !== undefined &&
            (desktop.connectedAt ?? desktop.disconnectedAt) <= desktop.disconnectedAt,
        );
        const closed = { ...desktop, consoleOpen: false };
        expect(planReclaim({ ...closed, processStartedAt }, now, policy)).toEqual(
          planReclaim(closed, now, policy),
        );
      }),
    );
  });
});

describe('describeSession', () => {
  it('shows an open console as connected with the maximum age pending', () => {
    expect(describeSession(facts({ connectedAt: at(1), consoleOpen: true }), grace15max8h)).toEqual({
      connected: true,
      reclaimAt: at(480),
      reclaimReason: 'max-duration',
    });
  });

  it('shows a disconnected desktop with the start of its grace and its reclaim', () => {
    expect(describeSession(facts({ connectedAt: at(1), disconnectedAt: at(10) }), grace15)).toEqual({
      connected: false,
      disconnectedAt: at(10),
      reclaimAt: at(25),
      reclaimReason: 'disconnect-grace',
    });
  });

  it('shows a desktop connected before a restart as disconnected at the restart', () => {
    expect(describeSession(facts({ connectedAt: at(1), processStartedAt: at(100) }), grace15)).toEqual({
      connected: false,
      disconnectedAt: at(100),
      reclaimAt: at(115),
      reclaimReason: 'disconnect-grace',
    });
  });

  it('shows a desktop that never had a console with nothing pending', () => {
    expect(describeSession(facts(), grace15)).toEqual({ connected: false });
  });

  it('agrees with planReclaim on the pending reclaim at every time before it', () => {
    fc.assert(
      fc.property(arbitraryFacts, time, arbitraryPolicy, (desktop, now, policy) => {
        const plan = planReclaim(desktop, now, policy);
        const view = describeSession(desktop, policy);
        if (plan.kind === 'keep') {
          expect(view.reclaimAt).toEqual(plan.reclaimAt);
          expect(view.reclaimReason).toEqual(plan.reclaimReason);
        } else {
          expect(view.reclaimReason).toBe(plan.reason);
          expect(view.reclaimAt?.getTime()).toBeLessThanOrEqual(now.getTime());
        }
      }),
    );
  });
});

describe('checkReclaimPolicy', () => {
  it('accepts the default policy and rejects a negative maximum', () => {
    expect(() => checkReclaimPolicy(defaultReclaimPolicy)).not.toThrow();
    let caught: unknown;
    try {
      checkReclaimPolicy({ disconnectGraceMs: 0, maxSessionMs: -5 });
    } catch (error) {
      caught = error;
    }
    expect(isVdiError(caught, 'INVALID_INPUT')).toBe(true);
    expect((caught as Error).message).toContain('maxSessionMs');
  });
});
