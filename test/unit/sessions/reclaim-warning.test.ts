import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  connectedAtAnnotation,
  disconnectedAtAnnotation,
  leaseMemberLabel,
  leasePoolLabel,
  reclaimWarnedAnnotation,
  rollOutAtAnnotation,
  sessionIdAnnotation,
} from '../../../src/keys.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import {
  describeSession,
  planReclaim,
  planReclaimWarning,
  type ReclaimPolicy,
  reclaimWarningFor,
  type SessionFacts,
  warnedMark,
} from '../../../src/sessions/plan-reclaim.js';
import { planReclaimPass } from '../../../src/sessions/plan-reclaim-pass.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);
const eightHours: ReclaimPolicy = {
  disconnectGraceMs: 15 * minute,
  maxSessionMs: 480 * minute,
  reclaimWarningMs: 5 * minute,
};

function facts(overrides: Partial<SessionFacts> = {}): SessionFacts {
  return {
    acquiredAt: at(0),
    consoleOpen: true,
    connectedAt: at(1),
    processStartedAt: at(-60),
    ...overrides,
  };
}

describe('planReclaimWarning', () => {
  it("warns of a roll-out's deadline within the reclaim warning and reclaims for it when it comes first", () => {
    const rolling = facts({ rollOutAt: at(120) });
    expect(planReclaimWarning(rolling, at(114), eightHours)).toEqual({ kind: 'none' });
    expect(planReclaimWarning(rolling, at(116), eightHours)).toEqual({
      kind: 'warn',
      reason: 'roll-out',
      at: at(120),
    });
    expect(planReclaim(rolling, at(120), eightHours)).toEqual({ kind: 'reclaim', reason: 'roll-out' });
    // the maximum age comes first: it names the reclaim
    expect(planReclaim(facts({ rollOutAt: at(600) }), at(480), eightHours)).toEqual({
      kind: 'reclaim',
      reason: 'max-duration',
    });
    expect(reclaimWarningFor('roll-out', eightHours)).toBe(5 * minute);
  });

  it("reads a roll-out's deadline from the claim's Lease", () => {
    const marked = lease({ [rollOutAtAnnotation]: at(30).toISOString() });
    expect(stepAt(marked, 26)).toMatchObject({ kind: 'warn', reason: 'roll-out', reclaimAt: at(30) });
    expect(stepAt(marked, 30)).toMatchObject({ kind: 'reclaim', reason: 'roll-out', dueAt: at(30) });
  });

  it('warns of a maximum-age reclaim within the reclaim warning, and not before it or once it is due', () => {
    expect(planReclaimWarning(facts(), at(474), eightHours)).toEqual({ kind: 'none' });
    expect(planReclaimWarning(facts(), at(475), eightHours)).toEqual({
      kind: 'warn',
      reason: 'max-duration',
      at: at(480),
    });
    expect(planReclaimWarning(facts(), at(480), eightHours)).toEqual({ kind: 'none' });
  });

  it('warns of a maximum-age reclaim with no console open too: the holder may be at a native client', () => {
    const away = facts({ consoleOpen: false, connectedAt: undefined });
    expect(planReclaimWarning(away, at(476), eightHours)).toMatchObject({
      kind: 'warn',
      reason: 'max-duration',
    });
  });

  it('sends no maximum-age warning when the reclaim warning is 0 or unset', () => {
    expect(planReclaimWarning(facts(), at(476), { ...eightHours, reclaimWarningMs: 0 })).toEqual({
      kind: 'none',
    });
    const { reclaimWarningMs: _, ...unset } = eightHours;
    expect(planReclaimWarning(facts(), at(476), unset)).toEqual({ kind: 'none' });
  });

  it('never warns of a disconnect grace, which comes first here', () => {
    const gone = facts({ consoleOpen: false, disconnectedAt: at(400) });
    expect(describeSession(gone, eightHours, at(410))).toMatchObject({ reclaimReason: 'disconnect-grace' });
    expect(planReclaimWarning(gone, at(410), { ...eightHours, reclaimWarningMs: 60 * minute })).toEqual({
      kind: 'none',
    });
  });

  it('takes each reason its own lead: the idle warning for idleness, the reclaim warning for the maximum age', () => {
    const policy = { ...eightHours, idleTimeoutMs: 30 * minute, idleWarningMs: 2 * minute };
    const working = facts({ lastInputAt: at(460) });
    // idle at 490 comes after the maximum age at 480: the maximum age is warned about with its 5 minutes
    expect(planReclaimWarning(working, at(476), policy)).toMatchObject({ reason: 'max-duration' });
    const idle = facts({ lastInputAt: at(100) });
    // idle at 130: warned 2 minutes ahead, not 5
    expect(planReclaimWarning(idle, at(127), policy)).toEqual({ kind: 'none' });
    expect(planReclaimWarning(idle, at(128), policy)).toEqual({ kind: 'warn', reason: 'idle', at: at(130) });
    expect(reclaimWarningFor('disconnect-grace', policy)).toBe(0);
    expect(reclaimWarningFor('not-entitled', policy)).toBe(0);
  });

  it('is never given at or after its reclaim, nor earlier than its lead', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 700 }),
        (maxMinutes, warnMinutes, nowMinutes) => {
          const policy = {
            disconnectGraceMs: 0,
            maxSessionMs: maxMinutes * minute,
            reclaimWarningMs: warnMinutes * minute,
          };
          const warning = planReclaimWarning(facts(), at(nowMinutes), policy);
          const left = maxMinutes - nowMinutes;
          expect(warning.kind === 'warn').toBe(warnMinutes > 0 && left > 0 && left <= warnMinutes);
          expect(describeSession(facts(), policy, at(nowMinutes)).reclaimWarning === true).toBe(
            warning.kind === 'warn',
          );
        },
      ),
    );
  });
});

describe('describeSession while warned', () => {
  it('sets reclaimWarning for every warned reason, and idleWarning only for idleness', () => {
    expect(describeSession(facts(), eightHours, at(477))).toEqual({
      connected: true,
      reclaimAt: at(480),
      reclaimReason: 'max-duration',
      reclaimWarning: true,
    });
    const idle = { ...eightHours, idleTimeoutMs: 30 * minute, idleWarningMs: 5 * minute };
    expect(describeSession(facts(), idle, at(28))).toMatchObject({
      reclaimReason: 'idle',
      reclaimWarning: true,
      idleWarning: true,
    });
  });
});

function lease(annotations: Record<string, string> = {}): LeaseObject {
  return {
    metadata: {
      name: leaseNameFor('devpool-1'),
      namespace: 'corral-vms',
      uid: 'uid-1',
      resourceVersion: '7',
      labels: { [leasePoolLabel]: 'devpool', [leaseMemberLabel]: 'devpool-1' },
      annotations: { [sessionIdAnnotation]: 'session-1', ...annotations },
    },
    spec: {
      holderIdentity: 'alice',
      acquireTime: at(0).toISOString(),
      renewTime: at(0).toISOString(),
      leaseDurationSeconds: 100_000,
    },
  };
}

function stepAt(object: LeaseObject, now: number, policy: ReclaimPolicy = eightHours) {
  const plan = planReclaimPass({
    leases: [object],
    consoles: new Map(),
    replicaId: 'replica-a',
    members: ['devpool-1'],
    settings: new Map(),
    now: at(now),
    policy,
    renewIntervalMs: 1_000 * minute,
    processStartedAt: at(-60),
  });
  return plan.steps[0];
}

describe('warnings in planReclaimPass', () => {
  // a native client's desktop: no broker console, so nothing but the maximum age ends it
  const native = () => lease();

  it('warns once of a maximum-age reclaim: a Lease marked with its reason and instant is not warned again', () => {
    expect(stepAt(native(), 476)).toMatchObject({ kind: 'warn', reason: 'max-duration', reclaimAt: at(480) });
    const warned = lease({ [reclaimWarnedAnnotation]: warnedMark({ reason: 'max-duration', at: at(480) }) });
    expect(stepAt(warned, 476)).toMatchObject({ kind: 'keep' });
    expect(stepAt(warned, 480)).toMatchObject({ kind: 'reclaim', reason: 'max-duration', dueAt: at(480) });
  });

  it('warns again of another instant: a mark of an earlier idle warning does not stand for the maximum age', () => {
    const idleMark = lease({ [reclaimWarnedAnnotation]: warnedMark({ reason: 'idle', at: at(300) }) });
    expect(stepAt(idleMark, 476)).toMatchObject({ kind: 'warn', reason: 'max-duration' });
  });

  it('asks for the pools settings for a warning, whose webhook the pool sets', () => {
    const plan = planReclaimPass({
      leases: [native()],
      consoles: new Map(),
      replicaId: 'replica-a',
      members: ['devpool-1'],
      now: at(476),
      policy: eightHours,
      renewIntervalMs: 1_000 * minute,
      processStartedAt: at(-60),
    });
    expect(plan.needsSettings).toBe(true);
  });

  it('does not warn a disconnected desktop of its grace', () => {
    const disconnected = lease({
      [connectedAtAnnotation]: at(1).toISOString(),
      [disconnectedAtAnnotation]: at(100).toISOString(),
    });
    expect(stepAt(disconnected, 112, { ...eightHours, reclaimWarningMs: 60 * minute })).toMatchObject({
      kind: 'keep',
    });
  });
});
