import { afterEach, describe, expect, it } from 'vitest';
import { createDesktopReader } from '../../../src/broker/desktop-reader.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const cluster = useSharedCluster();
const started: Vdi[] = [];

afterEach(() => {
  for (const vdi of started.splice(0)) vdi.stopCaches();
});

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', 3);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  for (const identity of ['alice', 'bob', 'carol']) await vdi.claim({ pool: 'devpool', identity });
  vdi.startCaches([namespace]);
  started.push(vdi);
  await vdi.waitForCacheSync();
  const kube = vdi.context.cluster;
  // the caches' own watches are not what a pass asks
  const asked = () => kube.requestTotal - (kube.requestCounts.get('watch') ?? 0);
  return { namespace, clock, vdi, kube, asked };
}

describe('a session engine reading from the watch caches', () => {
  it('makes no list request in its passes: one with nothing due asks nothing, one that renews only writes', async () => {
    const { namespace, clock, vdi, kube, asked } = await setUp('cached-pass');
    const engine = vdi.createSessionEngine({ namespaces: [namespace] });
    const lists = kube.requestCounts.get('list') ?? 0;
    for (let elapsed = 0; elapsed < 120; elapsed += 5) {
      clock.advance(5 * minute);
      const before = asked();
      const result = await engine.runPass();
      expect(result).toMatchObject({ desktops: 3, reclaimed: 0, errors: [] });
      // a renewal's answer reaches the cache at once, so the next pass does not renew it again
      expect(asked() - before).toBe(result.renewed);
    }
    expect(kube.requestCounts.get('list') ?? 0).toBe(lists);
    // two hours, a renewal every twenty minutes
    expect(kube.requestCounts.get('update')).toBe(3 * 6);
  });

  it('reclaims through the same release, and the next pass sees the claims gone without listing', async () => {
    const { namespace, clock, vdi, kube, asked } = await setUp('cached-reclaim');
    const engine = vdi.createSessionEngine({
      namespaces: [namespace],
      policy: { maxSessionMs: 30 * minute },
    });
    clock.advance(31 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 3, errors: [] });
    const lists = kube.requestCounts.get('list') ?? 0;
    const before = asked();
    expect(await engine.runPass()).toMatchObject({ desktops: 0, reclaimed: 0, errors: [] });
    expect(asked()).toBe(before);
    expect(kube.requestCounts.get('list') ?? 0).toBe(lists);
  });

  it("answers the broker's Lease reads from the caches", async () => {
    const { namespace, vdi, asked } = await setUp('cached-reader');
    const reader = createDesktopReader(vdi.context, vdi.createSessionEngine({ namespaces: [namespace] }), [
      namespace,
    ]);
    const before = asked();
    const leases = await reader.leasesByName();
    expect([...leases.values()].map((lease) => lease.spec.holderIdentity).sort()).toEqual([
      'alice',
      'bob',
      'carol',
    ]);
    expect(asked()).toBe(before);
  });
});
