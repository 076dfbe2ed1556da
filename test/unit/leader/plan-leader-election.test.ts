import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import {
  checkLeaderElectionTimings,
  defaultLeaderElectionTimings,
  isLeadershipHeld,
  type LeaderElectionTimings,
  observeLeaderLease,
  planLeaderRelease,
  planLeaderStep,
} from '../../../src/leader/plan-leader-election.js';
import { createTestClock } from '../../../src/testing/test-clock.js';

const timings: LeaderElectionTimings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (ms: number) => new Date(t0 + ms);
const micro = (ms: number) => at(ms).toISOString().replace('Z', '000Z');

function leaderLease(holder: string | undefined, renewedMs: number, version = '7'): LeaseObject {
  return {
    metadata: { name: 'corral-broker-leader', namespace: 'corral-vms', resourceVersion: version },
    spec: {
      ...(holder === undefined ? {} : { holderIdentity: holder }),
      leaseDurationSeconds: 3,
      acquireTime: micro(0),
      renewTime: micro(renewedMs),
      leaseTransitions: 2,
    },
  };
}

function step(lease: LeaseObject | undefined, identity: string, observedMs: number, nowMs: number) {
  return planLeaderStep({
    namespace: 'corral-vms',
    name: 'corral-broker-leader',
    lease,
    identity,
    observedAt: at(observedMs),
    now: at(nowMs),
    timings,
  });
}

describe('planLeaderStep', () => {
  it('creates the Lease when there is none, holding it from now', () => {
    expect(step(undefined, 'b', 0, 100)).toEqual({
      kind: 'create',
      lease: {
        metadata: { name: 'corral-broker-leader', namespace: 'corral-vms' },
        spec: {
          holderIdentity: 'b',
          leaseDurationSeconds: 3,
          acquireTime: at(100).toISOString(),
          renewTime: at(100).toISOString(),
          leaseTransitions: 0,
        },
      },
    });
  });

  it('follows another holder until a lease duration after it last saw the Lease change, retrying each period', () => {
    const lease = leaderLease('a', 0);
    expect(step(lease, 'b', 1000, 1000)).toEqual({ kind: 'follow', holder: 'a', retryAt: at(1500) });
    // the last try is scheduled at the very end of the wait, not a whole period later
    expect(step(lease, 'b', 1000, 3800)).toEqual({ kind: 'follow', holder: 'a', retryAt: at(4000) });
    expect(step(lease, 'b', 1000, 3999)).toMatchObject({ kind: 'follow' });
  });

  it('measures the wait from its own observation, not from the renewTime written by the holder’s clock', () => {
    // the holder's clock runs an hour behind: its renewTime looks long lapsed, yet the Lease just changed
    const lease = leaderLease('a', -3_600_000);
    expect(step(lease, 'b', 1000, 1200)).toMatchObject({ kind: 'follow' });
  });

  it('takes over a lapsed Lease on its resourceVersion, counting the transition and acquiring from now', () => {
    const planned = step(leaderLease('a', 0), 'b', 1000, 4000);
    expect(planned).toEqual({
      kind: 'update',
      takeover: true,
      lease: {
        metadata: { name: 'corral-broker-leader', namespace: 'corral-vms', resourceVersion: '7' },
        spec: {
          holderIdentity: 'b',
          leaseDurationSeconds: 3,
          acquireTime: at(4000).toISOString(),
          renewTime: at(4000).toISOString(),
          leaseTransitions: 3,
        },
      },
    });
  });

  it('takes a released Lease (no holder) at once', () => {
    expect(step(leaderLease(undefined, 0), 'b', 100, 100)).toMatchObject({
      kind: 'update',
      takeover: true,
      lease: { spec: { holderIdentity: 'b', leaseTransitions: 3 } },
    });
  });

  it('renews its own Lease keeping acquireTime and the transition count', () => {
    expect(step(leaderLease('a', 0), 'a', 0, 500)).toEqual({
      kind: 'update',
      takeover: false,
      lease: {
        metadata: { name: 'corral-broker-leader', namespace: 'corral-vms', resourceVersion: '7' },
        spec: {
          holderIdentity: 'a',
          leaseDurationSeconds: 3,
          acquireTime: micro(0),
          renewTime: at(500).toISOString(),
          leaseTransitions: 2,
        },
      },
    });
  });

  it('never takes over another holder’s Lease before a lease duration of seeing it unchanged', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 20_000 }), (seen, now) => {
        fc.pre(now >= seen);
        const planned = step(leaderLease('a', 0), 'b', seen, now);
        expect(planned.kind === 'follow').toBe(now < seen + timings.leaseDurationMs);
        if (planned.kind === 'follow') {
          expect(planned.retryAt.getTime()).toBeGreaterThan(at(now).getTime());
          expect(planned.retryAt.getTime()).toBeLessThanOrEqual(at(now + timings.retryPeriodMs).getTime());
        }
      }),
    );
  });
});

describe('observeLeaderLease', () => {
  it('keeps the time it first saw a version and restarts it on a new one, by an injected clock', () => {
    const clock = createTestClock(at(0));
    const first = observeLeaderLease(undefined, leaderLease('a', 0, '7'), clock.now());
    clock.advance(1000);
    expect(observeLeaderLease(first, leaderLease('a', 0, '7'), clock.now())).toBe(first);
    expect(observeLeaderLease(first, leaderLease('a', 900, '8'), clock.now())).toEqual({
      version: '8',
      at: at(1000),
    });
    expect(observeLeaderLease(first, undefined, clock.now())).toEqual({ version: undefined, at: at(1000) });
  });
});

describe('isLeadershipHeld', () => {
  it.each<[string, LeaseObject | undefined, string, number, boolean]>([
    ['holds its own Lease renewed within the renew deadline', leaderLease('a', 0), 'a', 1999, true],
    [
      'no longer at the renew deadline, before the lease duration ends',
      leaderLease('a', 0),
      'a',
      2000,
      false,
    ],
    ['never a Lease of another holder, however fresh', leaderLease('b', 0), 'a', 0, false],
    ['never a released Lease', leaderLease(undefined, 0), 'a', 0, false],
    ['never a missing Lease', undefined, 'a', 0, false],
  ])('%s', (_name, lease, identity, nowMs, expected) => {
    expect(isLeadershipHeld(lease, identity, at(nowMs), timings)).toBe(expected);
  });

  it('is false for a Lease without a readable renewTime', () => {
    const lease = leaderLease('a', 0);
    expect(
      isLeadershipHeld({ ...lease, spec: { ...lease.spec, renewTime: 'soon' } }, 'a', at(0), timings),
    ).toBe(false);
  });
});

describe('planLeaderRelease', () => {
  it('clears the holder of its own Lease and keeps the rest', () => {
    const released = planLeaderRelease(leaderLease('a', 0), 'a', at(700));
    expect(released?.spec).toEqual({
      leaseDurationSeconds: 1,
      acquireTime: micro(0),
      renewTime: at(700).toISOString(),
      leaseTransitions: 2,
    });
    expect(released?.metadata.resourceVersion).toBe('7');
  });

  it('releases nothing it does not hold', () => {
    expect(planLeaderRelease(leaderLease('b', 0), 'a', at(0))).toBeUndefined();
    expect(planLeaderRelease(undefined, 'a', at(0))).toBeUndefined();
  });
});

describe('checkLeaderElectionTimings', () => {
  it('accepts client-go’s defaults and a short test setting', () => {
    expect(() => checkLeaderElectionTimings(defaultLeaderElectionTimings)).not.toThrow();
    expect(() => checkLeaderElectionTimings(timings)).not.toThrow();
  });

  it.each<[string, LeaderElectionTimings]>([
    [
      'a renew deadline as long as the lease',
      { leaseDurationMs: 3000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
    ],
    [
      'a retry period as long as the deadline',
      { leaseDurationMs: 3000, renewDeadlineMs: 500, retryPeriodMs: 500 },
    ],
    ['a fraction of a millisecond', { leaseDurationMs: 3000.5, renewDeadlineMs: 2000, retryPeriodMs: 500 }],
    ['zero', { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 0 }],
  ])('refuses %s with INVALID_INPUT', (_name, bad) => {
    expect(() => checkLeaderElectionTimings(bad)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });
});
