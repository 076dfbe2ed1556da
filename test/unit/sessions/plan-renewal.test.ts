import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { planRenewal } from '../../../src/sessions/plan-renewal.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);
const micro = (minutes: number) => at(minutes).toISOString().replace('Z', '000Z');

function lease(spec: LeaseObject['spec']): LeaseObject {
  return { metadata: { name: 'corral-vdi-devpool-1', resourceVersion: '7' }, spec };
}

const held = (renewMinutes: number | undefined, extra: Partial<LeaseObject['spec']> = {}) =>
  lease({
    holderIdentity: 'alice@example.com',
    acquireTime: micro(0),
    ...(renewMinutes === undefined ? {} : { renewTime: micro(renewMinutes) }),
    leaseDurationSeconds: 3600,
    ...extra,
  });

describe('planRenewal', () => {
  it.each<[string, LeaseObject, number, number | undefined, ReturnType<typeof planRenewal>]>([
    [
      'waits while a third of the duration has not passed',
      held(0),
      19,
      undefined,
      { kind: 'wait', renewAt: at(20) },
    ],
    ['renews once a third of the duration has passed', held(0), 20, undefined, { kind: 'renew' }],
    [
      'counts from acquireTime when the Lease was never renewed',
      held(undefined),
      21,
      undefined,
      { kind: 'renew' },
    ],
    ['counts from the last renewal', held(30), 45, undefined, { kind: 'wait', renewAt: at(50) }],
    [
      'uses the Lease’s own duration',
      held(0, { leaseDurationSeconds: 600 }),
      3,
      undefined,
      { kind: 'wait', renewAt: at(10 / 3) },
    ],
    [
      'defaults to an hour when the Lease has no duration',
      held(0, { leaseDurationSeconds: undefined }),
      20,
      undefined,
      { kind: 'renew' },
    ],
    ['uses the given threshold', held(0), 5, 5 * minute, { kind: 'renew' }],
    ['waits for the given threshold', held(0), 4, 5 * minute, { kind: 'wait', renewAt: at(5) }],
    ['leaves an expired Lease alone', held(0), 61, undefined, { kind: 'expired' }],
    ['renews a Lease in its last instant', held(0), 60, undefined, { kind: 'renew' }],
    [
      'leaves a Lease without a holder alone',
      held(0, { holderIdentity: '' }),
      30,
      undefined,
      { kind: 'expired' },
    ],
    [
      'leaves a Lease without a readable time alone',
      lease({ holderIdentity: 'alice' }),
      0,
      undefined,
      { kind: 'expired' },
    ],
  ])('%s', (_name, subject, nowMinutes, renewIntervalMs, expected) => {
    expect(planRenewal(subject, at(nowMinutes), renewIntervalMs)).toEqual(expected);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects a threshold of %d with INVALID_INPUT', (renewIntervalMs) => {
    expect(() => planRenewal(held(0), at(0), renewIntervalMs)).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });

  it('rejects an invalid now with INVALID_INPUT', () => {
    expect(() => planRenewal(held(0), new Date(Number.NaN))).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });

  it('renews every live Lease, with passes at any interval below two thirds of its duration, before it expires', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 2399 }),
        fc.integer({ min: 0, max: 600 }),
        (intervalSeconds, offsetSeconds) => {
          let current = held(0);
          for (let now = offsetSeconds * 1000; now < 5 * 3600_000; now += intervalSeconds * 1000) {
            const plan = planRenewal(current, new Date(t0 + now));
            expect(plan.kind).not.toBe('expired');
            if (plan.kind === 'renew') current = held(now / minute);
          }
        },
      ),
    );
  });
});
