import { afterEach, describe, expect, it } from 'vitest';
import { type Broker, createBroker } from '../../../src/broker/broker.js';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';

const cluster = useSharedCluster();
const started: Broker[] = [];

afterEach(async () => {
  for (const broker of started.splice(0)) await broker.stop();
});

// what each verb was asked from `before` to now, leaving out the caches' own watches
function askedSince(before: ReadonlyMap<string, number>, now: ReadonlyMap<string, number>) {
  return Object.fromEntries(
    [...now]
      .filter(([verb, count]) => verb !== 'watch' && count !== (before.get(verb) ?? 0))
      .map(([verb, count]) => [verb, count - (before.get(verb) ?? 0)]),
  );
}

describe("an idle broker's loops", () => {
  it('and its metrics ask the apiserver nothing, pass after pass, over pools with nothing to do once the caches are synced', async () => {
    const [first, second] = await Promise.all([
      createTestNamespace(cluster(), 'idle-loops-a'),
      createTestNamespace(cluster(), 'idle-loops-b'),
    ]);
    await Promise.all([
      createPoolMembers(cluster(), first, 'desks', 3),
      createPoolMembers(cluster(), first, 'warm', 2),
      createPoolMembers(cluster(), second, 'lab', 2),
    ]);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace: first, clock: createTestClock() });
    const kube = vdi.context.cluster;
    await vdi.claim({ pool: 'desks', identity: 'alice' });
    // a pool that keeps one spare, which it has: the keeper has nothing left to do for it
    await vdi.setPool({ name: 'warm', minReady: 1 });
    expect((await vdi.keepSpares()).kept).toMatchObject([{ started: ['warm-1'] }]);
    await waitForRunningVmi(kube, first, 'warm-1');

    const broker = createBroker({
      vdi,
      identity: [authGatewayIdentity({ header: 'X-Forwarded-Email' })],
      namespaces: [first, second],
      caches: true,
      log: () => {},
    });
    started.push(broker);
    broker.start();
    await vdi.waitForCacheSync();
    await waitFor(() => broker.isLeader(), { describe: 'the broker to start its loops' });

    const before = new Map(kube.requestCounts);
    // each round is one period of every loop the broker runs on a timer, and a scrape of its metrics
    for (let round = 0; round < 5; round += 1) {
      const [spares, ctPools, sessions, metrics] = await Promise.all([
        broker.keepSpares(),
        broker.reconcileCtPools(),
        broker.sessions.runPass(),
        broker.metrics.render(),
      ]);
      expect(metrics).toContain(`namespace="${second}"`);
      expect(spares).toMatchObject({
        kept: [{ id: `vm/${first}/warm`, started: [], stopped: [] }],
        failed: [],
      });
      expect(ctPools).toEqual({ reconciled: [], failed: [] });
      expect(sessions).toMatchObject({ desktops: 1, renewed: 0, reclaimed: 0, errors: [] });
    }
    expect(askedSince(before, kube.requestCounts)).toEqual({});
  });

  it('a container pool with nothing to do costs one read of its Pods, Services and home claims a pass', async () => {
    const namespace = await createTestNamespace(cluster(), 'idle-loops-ct');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const kube = vdi.context.cluster;
    await vdi.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 2 } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    for (const member of ['devbox-1', 'devbox-2']) {
      await waitFor(() => kube.resource(podKind).in(namespace).get(member), {
        describe: `Pod ${namespace}/${member} to run`,
        until: (pod) => pod?.status?.phase === 'Running',
      });
    }
    await vdi.claim({ pool: 'devbox', identity: 'alice', kind: 'ct' });
    const broker = createBroker({
      vdi,
      identity: [authGatewayIdentity({ header: 'X-Forwarded-Email' })],
      namespaces: [namespace],
      caches: true,
      log: () => {},
    });
    started.push(broker);
    broker.start();
    await vdi.waitForCacheSync();
    await waitFor(() => broker.isLeader(), { describe: 'the broker to start its loops' });
    // the pass the start began, which the first call would join
    await broker.reconcileCtPools();

    const before = new Map(kube.requestCounts);
    for (let round = 0; round < 3; round += 1) {
      expect(await broker.reconcileCtPools()).toMatchObject({
        reconciled: [{ id: `ct/${namespace}/devbox`, created: [], replaced: [], removed: [] }],
        failed: [],
      });
    }
    // the pool's spec and Leases come from the caches, and the names a new member must avoid are read only for one
    expect(askedSince(before, kube.requestCounts)).toEqual({ list: 9 });
  });
});
