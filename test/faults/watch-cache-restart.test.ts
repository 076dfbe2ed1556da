import { describe, expect, it } from 'vitest';
import { leaseMemberLabel, leasePoolLabel } from '../../src/keys.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { LeaseObject } from '../../src/kube-objects.js';
import { createTestClock } from '../../src/testing/test-clock.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createTestNamespace, usePrivateCluster } from '../support/cluster.js';

const cluster = usePrivateCluster();

function claimLease(member: string, holder: string): LeaseObject {
  const now = new Date().toISOString();
  return {
    metadata: {
      name: `corral-vdi-${member}`,
      labels: { [leasePoolLabel]: 'devpool', [leaseMemberLabel]: member },
    },
    spec: { holderIdentity: holder, acquireTime: now, renewTime: now, leaseDurationSeconds: 3600 },
  };
}

describe('the watch caches while the kube-apiserver restarts', () => {
  it('back off while it is down, list again when their versions are gone, and catch up with every change made meanwhile and after', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-restart');
    const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
    const failures: string[] = [];
    kube.startCaches([namespace], {
      clock: createTestClock(),
      onFailure: (error) => failures.push(error.code),
    });
    try {
      await kube.waitForCacheSync();
      const other = new KubeCluster(cluster().kubeConfig);
      await other.createLease(namespace, claimLease('devpool-1', 'alice'));
      const cached = () => kube.listLeases(namespace, leasePoolLabel, { cached: true });
      await waitFor(cached, {
        describe: "alice's Lease in the cache",
        until: (leases) => leases.length === 1,
      });
      const lists = kube.requestCounts.get('list') ?? 0;

      await cluster().restartApiserver();
      const bobs = await other.createLease(namespace, claimLease('devpool-2', 'bob'));
      await other.deleteLease(namespace, 'corral-vdi-devpool-1', {});
      await waitFor(cached, {
        describe: "the cache to show bob's Lease and not alice's",
        until: (leases) => leases.length === 1 && leases[0]?.metadata.uid === bobs.metadata.uid,
      });
      // the watches broke off with the apiserver and were started again
      expect(failures.length).toBeGreaterThan(0);
      expect(kube.requestCounts.get('watch') ?? 0).toBeGreaterThan(3);
      console.log(
        `after the restart: ${(kube.requestCounts.get('list') ?? 0) - lists} lists, failures ${failures}`,
      );
    } finally {
      kube.stopCaches();
    }
  });
});
