import { describe, expect, it } from 'vitest';
import {
  inputAtAnnotation,
  leaseMemberLabel,
  leasePoolLabel,
  reclaimNotifiedAnnotation,
  reclaimWarnedAnnotation,
  sessionIdAnnotation,
} from '../../../src/keys.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { claimKeyOf } from '../../../src/sessions/claim-key.js';
import {
  describeSession,
  planReclaim,
  planReclaimWarning,
  type ReclaimPolicy,
  type SessionFacts,
} from '../../../src/sessions/plan-reclaim.js';
import { planReclaimPass } from '../../../src/sessions/plan-reclaim-pass.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);
const idle30: ReclaimPolicy = {
  disconnectGraceMs: 15 * minute,
  maxSessionMs: 0,
  idleTimeoutMs: 30 * minute,
  idleWarningMs: 5 * minute,
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

describe('idle reclaim in planReclaim', () => {
  it.each<[string, Partial<SessionFacts>, number, ReturnType<typeof planReclaim>]>([
    [
      'keeps a connected desktop within its idle time, counted from the connect',
      {},
      30,
      { kind: 'keep', reclaimAt: at(31), reclaimReason: 'idle' },
    ],
    ['reclaims a connected desktop idle since its connect', {}, 31, { kind: 'reclaim', reason: 'idle' }],
    [
      'counts from the last input',
      { lastInputAt: at(20) },
      49,
      { kind: 'keep', reclaimAt: at(50), reclaimReason: 'idle' },
    ],
    [
      'reclaims once the last input is the timeout old',
      { lastInputAt: at(20) },
      50,
      { kind: 'reclaim', reason: 'idle' },
    ],
    [
      'counts a desktop marked connected on its Lease (a console on another replica)',
      { consoleOpen: false, connectedAt: at(5), processStartedAt: at(30) },
      34,
      { kind: 'keep', reclaimAt: at(35), reclaimReason: 'idle' },
    ],
    [
      'never idles a desktop without a broker console, as a native client is invisible',
      { consoleOpen: false, connectedAt: undefined },
      10_000,
      { kind: 'keep' },
    ],
    [
      'leaves a disconnected desktop to the disconnect grace',
      { consoleOpen: false, connectedAt: at(1), disconnectedAt: at(2), lastInputAt: at(1) },
      16,
      { kind: 'keep', reclaimAt: at(17), reclaimReason: 'disconnect-grace' },
    ],
    [
      'ignores input of an earlier claim',
      { acquiredAt: at(10), connectedAt: at(11), lastInputAt: at(5) },
      40,
      { kind: 'keep', reclaimAt: at(41), reclaimReason: 'idle' },
    ],
  ])('%s', (_, overrides, now, expected) => {
    expect(planReclaim(facts(overrides), at(now), idle30)).toEqual(expected);
  });

  it('turns idle reclaim off with a timeout of 0 or none', () => {
    expect(planReclaim(facts(), at(10_000), { ...idle30, idleTimeoutMs: 0 })).toEqual({ kind: 'keep' });
    expect(planReclaim(facts(), at(10_000), { disconnectGraceMs: 0, maxSessionMs: 0 })).toEqual({
      kind: 'keep',
    });
  });

  it('warns within the warning time before the idle reclaim, and not before or after', () => {
    expect(planReclaimWarning(facts(), at(25), idle30)).toEqual({ kind: 'none' });
    expect(planReclaimWarning(facts(), at(26), idle30)).toEqual({ kind: 'warn', reason: 'idle', at: at(31) });
    expect(planReclaimWarning(facts(), at(31), idle30)).toEqual({ kind: 'none' });
    expect(planReclaimWarning(facts(), at(26), { ...idle30, idleWarningMs: 0 })).toEqual({ kind: 'none' });
    expect(describeSession(facts(), idle30, at(27))).toMatchObject({
      reclaimReason: 'idle',
      idleWarning: true,
    });
    expect(describeSession(facts(), idle30, at(20)).idleWarning).toBeUndefined();
  });
});

function lease(annotations: Record<string, string> = {}): LeaseObject {
  return {
    metadata: {
      name: leaseNameFor('devpool-1'),
      uid: 'u-1',
      labels: { [leasePoolLabel]: 'devpool', [leaseMemberLabel]: 'devpool-1' },
      annotations: {
        [sessionIdAnnotation]: 's-1',
        'corral.dev/vdi-connected-at': at(1).toISOString(),
        ...annotations,
      },
    },
    spec: {
      holderIdentity: 'alice',
      acquireTime: at(0).toISOString(),
      renewTime: at(0).toISOString(),
      leaseDurationSeconds: 100_000,
    },
  };
}

function plan(object: LeaseObject, now: number, extra: Partial<Parameters<typeof planReclaimPass>[0]> = {}) {
  // a console of this process is open on the desktop
  const open = {
    claim: claimKeyOf(object),
    open: 1,
    connectedAt: at(1),
    disconnectedAt: undefined,
    version: 1,
    written: 1,
  };
  return planReclaimPass({
    leases: [object],
    consoles: new Map([['devpool-1', open]]),
    replicaId: 'replica-a',
    members: ['devpool-1'],
    now: at(now),
    policy: idle30,
    renewIntervalMs: 1_000 * minute,
    processStartedAt: at(-60),
    ...extra,
  }).steps[0];
}

describe('idle reclaim and notify in planReclaimPass', () => {
  it('reads the input mark of the Lease, and this process input when newer', () => {
    const object = lease({ [inputAtAnnotation]: at(20).toISOString() });
    expect(plan(object, 44)).toMatchObject({ kind: 'keep' });
    expect(plan(object, 50)).toMatchObject({ kind: 'reclaim', reason: 'idle', dueAt: at(50), notify: false });
    expect(plan(object, 50, { inputs: new Map([['devpool-1', at(40)]]) })).toMatchObject({ kind: 'keep' });
  });

  it('warns once per idle instant: a Lease marked with it is not warned again', () => {
    expect(plan(lease(), 27)).toMatchObject({ kind: 'warn', reason: 'idle', reclaimAt: at(31) });
    expect(plan(lease({ [reclaimWarnedAnnotation]: `idle ${at(31).toISOString()}` }), 27)).toMatchObject({
      kind: 'keep',
    });
    // input since moved the idle instant: a new warning
    const moved = lease({
      [reclaimWarnedAnnotation]: `idle ${at(31).toISOString()}`,
      [inputAtAnnotation]: at(10).toISOString(),
    });
    expect(plan(moved, 36)).toMatchObject({ kind: 'warn', reason: 'idle', reclaimAt: at(40) });
  });

  it('takes the pool idle timeout over the broker one', () => {
    const settings = new Map([['devpool', { idleTimeoutMs: 60 * minute }]]);
    expect(plan(lease(), 31, { settings })).toMatchObject({ kind: 'keep' });
    expect(plan(lease(), 61, { settings })).toMatchObject({ kind: 'reclaim', reason: 'idle' });
    const off = new Map([['devpool', { idleTimeoutMs: 0 }]]);
    expect(plan(lease(), 900, { settings: off })).toMatchObject({ kind: 'keep' });
  });

  it('notifies a due reclaim of a notify pool once, then keeps and renews the claim', () => {
    const settings = new Map([['devpool', { reclaimAction: 'notify' as const }]]);
    expect(plan(lease(), 31, { settings })).toMatchObject({ kind: 'reclaim', reason: 'idle', notify: true });
    const reported = lease({ [reclaimNotifiedAnnotation]: `idle ${at(31).toISOString()}` });
    expect(plan(reported, 40, { settings })).toMatchObject({ kind: 'keep' });
    expect(plan(reported, 40, { settings, renewIntervalMs: minute })).toMatchObject({ kind: 'renew' });
    // a mark of another reclaim does not stand for this one
    const other = lease({ [reclaimNotifiedAnnotation]: `max-duration ${at(31).toISOString()}` });
    expect(plan(other, 40, { settings })).toMatchObject({ kind: 'reclaim', notify: true });
  });
});

describe('when a pass reads the pools settings', () => {
  const input = (object: LeaseObject, now: number, consoles = new Map()) => ({
    leases: [object],
    consoles,
    replicaId: 'replica-a',
    members: ['devpool-1'],
    now: at(now),
    policy: { disconnectGraceMs: 15 * minute, maxSessionMs: 0 },
    renewIntervalMs: 1_000 * minute,
    processStartedAt: at(-60),
  });
  const unconnected = (): LeaseObject => {
    const object = lease();
    delete object.metadata.annotations?.['corral.dev/vdi-connected-at'];
    return object;
  };

  it('reads them not at all while nothing is due and no broker console is open', () => {
    expect(planReclaimPass(input(unconnected(), 10)).needsSettings).toBe(false);
  });

  it('reads them for a desktop with a broker console open, whose pool may set an idle timeout', () => {
    const object = lease();
    const open = new Map([
      [
        'devpool-1',
        {
          claim: claimKeyOf(object),
          open: 1,
          connectedAt: at(1),
          disconnectedAt: undefined,
          version: 1,
          written: 1,
        },
      ],
    ]);
    expect(planReclaimPass(input(object, 10, open)).needsSettings).toBe(true);
    expect(planReclaimPass({ ...input(object, 10, open), settings: new Map() }).needsSettings).toBe(false);
  });

  it('reads them for a due reclaim, whose action the pool sets', () => {
    const object = unconnected();
    object.metadata.annotations = {
      ...object.metadata.annotations,
      'corral.dev/vdi-connected-at': at(1).toISOString(),
      'corral.dev/vdi-disconnected-at': at(2).toISOString(),
    };
    expect(planReclaimPass(input(object, 20)).needsSettings).toBe(true);
  });
});
