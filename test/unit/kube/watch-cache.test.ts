import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isWithinSelector, matchesLabels, parseLabelSelector } from '../../../src/kube/label-selector.js';
import { isNewerVersion, planWatchRestart, type WatchEnd } from '../../../src/kube/watch-cache.js';

const minute = 60_000;

describe('planWatchRestart', () => {
  const base = { failures: 0, listedAtMs: 0, nowMs: minute, resyncMs: 10 * minute };

  it.each<[string, WatchEnd, number, { relist: boolean; failures: number; waitMs: number }]>([
    ['a watch the apiserver closed goes on at once', 'closed', 0, { relist: false, failures: 0, waitMs: 0 }],
    ['a close after failures clears them', 'closed', 3, { relist: false, failures: 0, waitMs: 0 }],
    ['410 Gone lists again at once', 'expired', 0, { relist: true, failures: 0, waitMs: 0 }],
    ['a first failure waits half a second', 'failed', 0, { relist: false, failures: 1, waitMs: 500 }],
    ['a third failure waits two seconds', 'failed', 2, { relist: false, failures: 3, waitMs: 2000 }],
    ['failures wait 30 s at most', 'failed', 12, { relist: false, failures: 13, waitMs: 30_000 }],
  ])('%s', (_, end, failures, plan) => {
    expect(planWatchRestart({ ...base, end, failures })).toEqual(plan);
  });

  it('lists again after any end once the last list is as old as the resync bound', () => {
    for (const end of ['closed', 'expired', 'failed'] as const) {
      expect(planWatchRestart({ ...base, end, nowMs: 10 * minute }).relist).toBe(true);
      expect(planWatchRestart({ ...base, end, nowMs: 10 * minute - 1 }).relist).toBe(end === 'expired');
    }
  });

  it('never waits longer than 30 s nor less after a failure than after the one before', () => {
    fc.assert(
      fc.property(fc.nat(60), (failures) => {
        const plan = planWatchRestart({ ...base, end: 'failed', failures });
        const before = planWatchRestart({ ...base, end: 'failed', failures: Math.max(0, failures - 1) });
        return plan.waitMs <= 30_000 && plan.waitMs >= before.waitMs && plan.failures === failures + 1;
      }),
    );
  });
});

describe('isNewerVersion', () => {
  it('compares etcd resourceVersions as integers, not as text', () => {
    expect(isNewerVersion('10', '9')).toBe(true);
    expect(isNewerVersion('9', '10')).toBe(false);
    expect(isNewerVersion('10', '10')).toBe(false);
    expect(isNewerVersion('10', undefined)).toBe(true);
  });
});

describe('label selectors', () => {
  it('parse the equality-based forms and refuse the set-based ones', () => {
    expect(parseLabelSelector('a, !b,c=d,e==f,g!=h')).toEqual([
      { key: 'a', op: 'exists' },
      { key: 'b', op: 'absent' },
      { key: 'c', op: 'equals', value: 'd' },
      { key: 'e', op: 'equals', value: 'f' },
      { key: 'g', op: 'differs', value: 'h' },
    ]);
    expect(parseLabelSelector('')).toEqual([]);
    expect(parseLabelSelector('a in (b,c)')).toBeUndefined();
    expect(parseLabelSelector('a=b=c')).toBeUndefined();
  });

  it('match labels as the apiserver does', () => {
    const match = (selector: string, labels?: Record<string, string>) =>
      matchesLabels(parseLabelSelector(selector) ?? [], labels);
    expect(match('pool', { pool: 'x' })).toBe(true);
    expect(match('pool', {})).toBe(false);
    expect(match('!pool', undefined)).toBe(true);
    expect(match('pool=x,holder=h', { pool: 'x', holder: 'h' })).toBe(true);
    expect(match('pool=x,holder=h', { pool: 'x' })).toBe(false);
    // as in Kubernetes, != also selects objects without the label
    expect(match('pool!=x', {})).toBe(true);
    expect(match('pool!=x', { pool: 'x' })).toBe(false);
    expect(match('', undefined)).toBe(true);
  });

  it('tell when a cache of one selector can answer a list of another', () => {
    const within = (narrower: string, wider: string) =>
      isWithinSelector(parseLabelSelector(narrower) ?? [], parseLabelSelector(wider) ?? []);
    expect(within('pool=x', 'pool')).toBe(true);
    expect(within('pool=x,holder=h', 'pool')).toBe(true);
    expect(within('pool', 'pool')).toBe(true);
    expect(within('anything', '')).toBe(true);
    expect(within('', 'pool')).toBe(false);
    expect(within('holder=h', 'pool')).toBe(false);
    expect(within('pool=x', 'pool=y')).toBe(false);
  });

  it('a narrower selector never selects what the wider one leaves out', () => {
    const key = fc.constantFrom('a', 'b', 'c');
    const value = fc.constantFrom('1', '2');
    const term = fc.oneof(
      key,
      key.map((k) => `!${k}`),
      fc.tuple(key, value).map(([k, v]) => `${k}=${v}`),
      fc.tuple(key, value).map(([k, v]) => `${k}!=${v}`),
    );
    const selector = fc.array(term, { maxLength: 3 }).map((terms) => terms.join(','));
    const labels = fc.dictionary(key, value);
    fc.assert(
      fc.property(selector, selector, labels, (narrower, wider, objectLabels) => {
        const [n, w] = [parseLabelSelector(narrower) ?? [], parseLabelSelector(wider) ?? []];
        if (!isWithinSelector(n, w) || !matchesLabels(n, objectLabels)) return true;
        return matchesLabels(w, objectLabels);
      }),
    );
  });
});
