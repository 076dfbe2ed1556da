import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe('one claim liveness for listing and claiming, against the real apiserver', () => {
  it('lists a desktop as someone’s exactly when another claimant cannot take it', async () => {
    const namespace = await createTestNamespace(cluster(), 'liveness');
    const pools = ['held', 'expired', 'timeless', 'orphan', 'free'];
    for (const pool of pools) await createPoolMembers(cluster(), namespace, pool, 1);
    const clock = createTestClock(new Date());
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const kube = vdi.context.cluster;

    await vdi.claim({ pool: 'expired', identity: 'alice' });
    clock.advance(3601_000);
    await vdi.claim({ pool: 'held', identity: 'alice' });
    // a Lease that names a holder but carries no time, as another tool might leave it
    await kube.createLease(namespace, {
      metadata: { name: 'corral-vdi-timeless-1', labels: { 'corral.dev/vdi-pool': 'timeless' } },
      spec: { holderIdentity: 'alice' },
    });
    // a running member whose Lease was deleted by hand
    await vdi.claim({ pool: 'orphan', identity: 'alice' });
    const orphaned = await kube.getLease(namespace, 'corral-vdi-orphan-1');
    await kube.deleteLease(namespace, 'corral-vdi-orphan-1', { uid: orphaned?.metadata.uid ?? '' });

    const listed = (await vdi.listDesktops({})).map((desktop) => desktop.member).sort();
    const alices = (await vdi.listDesktops({ identity: 'alice' })).map((desktop) => desktop.member).sort();
    const everyMember = (await vdi.listDesktops({ all: true })).map((desktop) => desktop.member).sort();
    expect(listed).toEqual(['held-1', 'orphan-1']);
    expect(alices).toEqual(listed);
    expect(everyMember).toEqual(pools.map((pool) => `${pool}-1`).sort());

    const taken: string[] = [];
    for (const pool of pools) {
      const outcome = await vdi.claim({ pool, identity: 'bob' }).catch((error: unknown) => error);
      if (isVdiError(outcome)) expect(outcome.code).toBe('NO_FREE_MEMBER');
      else taken.push((outcome as { member: string }).member);
    }
    expect(taken.sort()).toEqual(['expired-1', 'free-1', 'timeless-1']);
    expect(taken.filter((member) => listed.includes(member))).toEqual([]);
  });

  it("lists desktops from this process's synced watch caches without reading VMs, VMIs or Leases again", async () => {
    const namespace = await createTestNamespace(cluster(), 'cached-desktops');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    vdi.startCaches([namespace]);
    try {
      await vdi.waitForCacheSync();
      const claimed = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
      vdi.context.cluster.requestCounts.clear();
      const listed = await vdi.listDesktops({ identity: 'alice@example.com' });
      expect(listed.map((desktop) => desktop.member)).toEqual([claimed.member]);
      // the container pools' Pods, which no cache holds, are the one list
      expect(Object.fromEntries(vdi.context.cluster.requestCounts)).toEqual({ list: 1 });
    } finally {
      vdi.stopCaches();
    }
  });

  it('gives the holder of an expired claim CLAIM_EXPIRED, keeps its release, and lists it nowhere as theirs', async () => {
    const namespace = await createTestNamespace(cluster(), 'expired');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await vdi.claim({ pool: 'devpool', identity: 'alice' });
    clock.advance(3601_000);

    expect(await vdi.listDesktops({ identity: 'alice' })).toEqual([]);
    const started = await vdi
      .start({ member: 'devpool-1', identity: 'alice' })
      .catch((error: unknown) => error);
    expect(isVdiError(started, 'CLAIM_EXPIRED')).toBe(true);
    const refused = await vdi
      .release({ member: 'devpool-1', identity: 'bob' })
      .catch((error: unknown) => error);
    expect(isVdiError(refused, 'NOT_HOLDER')).toBe(true);
    const released = await vdi.release({ member: 'devpool-1', identity: 'alice' });
    expect(released).toMatchObject({ holder: 'alice', force: false, reset: 'stopped' });
    expect(await vdi.context.cluster.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();
  });
});
