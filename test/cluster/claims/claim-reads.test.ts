import { tmpdir } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { writeClaimLease } from '../../../src/claims/lease-writes.js';
import { assignedToKey, poolLabel, uncheckedHolderGroups } from '../../../src/keys.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import {
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';
import { startCountingProxy } from '../../support/counting-proxy.js';

const cluster = useSharedCluster();

/** The response bytes and requests of `claims` claims one after another, with the defaults (no watch caches). */
async function readsOfClaims(namespace: string, pool: string, claims: number) {
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const kube = vdi.context.cluster;
  const [bytesBefore, requestsBefore] = [kube.responseBytes, kube.requestTotal];
  for (let index = 1; index <= claims; index += 1) await vdi.claim({ pool, identity: `user-${index}` });
  return {
    bytes: (kube.responseBytes - bytesBefore) / claims,
    requests: (kube.requestTotal - requestsBefore) / claims,
  };
}

describe('the reads of a claim without watch caches', () => {
  it('a claim in a pool of 500 members reads about as much as one in a pool of 20', async () => {
    const [small, big] = await Promise.all([
      createTestNamespace(cluster(), 'reads-small'),
      createTestNamespace(cluster(), 'reads-big'),
    ]);
    await createPoolMembers(cluster(), small, 'devpool', 20);
    await createPoolMembers(cluster(), big, 'devpool', 500);
    const ofSmall = await readsOfClaims(small, 'devpool', 3);
    const ofBig = await readsOfClaims(big, 'devpool', 3);
    // every member's VM is about 1 KB as listed: a claim that reads the whole pool reads 25 times as much at 500
    expect(ofBig.bytes).toBeLessThanOrEqual(ofSmall.bytes * 1.5);
    expect(ofBig.requests).toBeLessThanOrEqual(ofSmall.requests + 1);
  }, 180_000);
});

describe('claims of one process without watch caches', () => {
  it('claims made at once never race each other for a member, also once they take the last ones', async () => {
    const namespace = await createTestNamespace(cluster(), 'reads-together');
    await createPoolMembers(cluster(), namespace, 'devpool', 40);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    let conflicts = 0;
    vdi.events.on('claim-conflict', () => {
      conflicts += 1;
    });
    const claimed = await Promise.all(
      Array.from({ length: 40 }, (_, index) => vdi.claim({ pool: 'devpool', identity: `user-${index + 1}` })),
    );
    expect(new Set(claimed.map((desktop) => desktop.id)).size).toBe(40);
    // a page holds ten members: a claim that picked one while another claim of the process was taking it, or one a
    // page read from an older snapshot showed free after it was presented, loses the Lease create
    expect(conflicts).toBe(0);
  }, 180_000);

  it('a claim whose pages another process took since they were read walks again from a fresh first page, not the whole pool', async () => {
    const namespace = await createTestNamespace(cluster(), 'reads-walk');
    const members = await createPoolMembers(cluster(), namespace, 'devpool', 30);
    const proxy = await startCountingProxy(cluster(), `${tmpdir()}/reads-walk-${process.pid}.kubeconfig`);
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(proxy.kubeconfigPath);
      const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
      const other = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
      // the first page's members, as the apiserver orders them, won by another process's claims not presented yet
      for (const member of [...members].sort().slice(0, 10)) {
        const target = { kind: 'vm' as const, namespace, pool: 'devpool', member, identity: 'other-user' };
        await writeClaimLease(other.context, { ...target, holderGroups: uncheckedHolderGroups }, undefined);
      }
      // this claim finds nothing usable on the first page: it wins on the second, where the next claim starts
      await vdi.claim({ pool: 'devpool', identity: 'user-1' });
      // meanwhile the other process takes every other member, and the pool grows by three
      const taken = await Promise.all(
        Array.from({ length: 19 }, (_, index) =>
          other.claim({ pool: 'devpool', identity: `other-${index}` }),
        ),
      );
      expect(new Set(taken.map((desktop) => desktop.member)).size).toBe(19);
      const kube = new KubeCluster(cluster().kubeConfig);
      const grown = ['devpool-31', 'devpool-32', 'devpool-33'];
      for (const name of grown) await kube.createVm(namespace, stoppedVm(name, { [poolLabel]: 'devpool' }));
      await waitFor(() => kube.listVms(namespace, `${poolLabel}=devpool`), {
        describe: 'the three new members to show Stopped',
        until: (vms) =>
          grown.every((name) =>
            vms.some((vm) => vm.metadata?.name === name && vm.status?.printableStatus === 'Stopped'),
          ),
      });
      const before = proxy.requests().length;
      const claimed = await vdi.claim({ pool: 'devpool', identity: 'user-2' });
      expect(grown).toContain(claimed.member);
      // the pages from where the last claim won show the pool as it was before: every member on them is taken now
      const wholePoolReads = proxy
        .requests()
        .slice(before)
        .filter(
          (request) =>
            request.verb === 'list' &&
            request.resource === 'virtualmachines' &&
            request.labelSelector === `${poolLabel}=devpool`,
        );
      expect(wholePoolReads).toEqual([]);
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it('a claim of a stopped member reads the member and its instance, at once, before it writes the Lease', async () => {
    const namespace = await createTestNamespace(cluster(), 'reads-check');
    await createPoolMembers(cluster(), namespace, 'devpool', 5);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const gets = () => vdi.context.cluster.requestCounts.get('get') ?? 0;
    const before = gets();
    await vdi.claim({ pool: 'devpool', identity: 'user-1' });
    // the member's VM and its instance, side by side: KubeVirt may have made an instance its VM does not show yet
    expect(gets() - before).toBe(2);
  }, 60_000);

  it('claims made at once read the members their copies name together, and each adopts only its own', async () => {
    const namespace = await createTestNamespace(cluster(), 'reads-named');
    await createPoolMembers(cluster(), namespace, 'devpool', 20);
    // two v0.6.0 assignments, kept only as the label, to two of the identities that claim
    const kube = new KubeCluster(cluster().kubeConfig);
    for (const [member, user] of [
      ['devpool-21', 'user-3'],
      ['devpool-22', 'user-8'],
    ] as const)
      await kube.createVm(namespace, stoppedVm(member, { [poolLabel]: 'devpool', [assignedToKey]: user }));
    const proxy = await startCountingProxy(cluster(), `${tmpdir()}/reads-named-${process.pid}.kubeconfig`);
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(proxy.kubeconfigPath);
      const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
      const claims = 12;
      const claimed = await Promise.all(
        Array.from({ length: claims }, (_, index) =>
          vdi.claim({ pool: 'devpool', identity: `user-${index + 1}` }),
        ),
      );
      expect(
        claimed.filter((desktop) => desktop.adopted).map((desktop) => [desktop.owner, desktop.member]),
      ).toEqual([
        ['user-3', 'devpool-21'],
        ['user-8', 'devpool-22'],
      ]);
      expect(new Set(claimed.map((desktop) => desktop.member)).size).toBe(claims);
      // such a selector is matched against every VM of the namespace: once for the claims that ask together
      const namedReads = proxy
        .requests()
        .filter(
          (request) =>
            request.verb === 'list' &&
            request.resource === 'virtualmachines' &&
            /(^|,)corral\.dev\/vdi-assigned-to( in \(|=)/.test(request.labelSelector),
        );
      expect(namedReads.length).toBeGreaterThan(0);
      expect(namedReads.length).toBeLessThanOrEqual(claims / 4);
    } finally {
      await proxy.close();
    }
  }, 120_000);
});
