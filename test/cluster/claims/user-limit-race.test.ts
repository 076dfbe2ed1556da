import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { leaseMemberLabel } from '../../../src/keys.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { leaseKind } from '../../../src/kube/resource-kinds.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();
const pools = ['p1', 'p2', 'p3', 'p4', 'p5'];
const poolSize = 10;
const users = Array.from({ length: 20 }, (_, index) => `user-${index + 1}@example.com`);
const replicaCount = 3;
const limit = 2;
// each user claims every pool twice (a double-click), so that 200 claims race
const claimsPerPool = 2;
// a claim that lost a race too often may be retried, as a client of the broker does
const retries = 5;

/**
 * Watches the namespace's claim Leases from `resourceVersion` on and keeps, for every holder, the most member
 * Leases it held at any one moment: after each event, in the order the apiserver wrote them. A watch the apiserver
 * ends (it drops a watcher that reads too slowly while the machine is busy) goes on from the last version seen;
 * one that cannot leaves a gap, and `gaps` says so.
 */
function watchHeld(kube: KubeCluster, namespace: string, resourceVersion: string) {
  const holderOf = new Map<string, string>();
  const mostHeld = new Map<string, number>();
  const gaps: string[] = [];
  const abort = new AbortController();
  let events = 0;
  let watches = 0;
  let lastVersion = resourceVersion;
  const onEvent = ({ type, object }: { type: string; object: unknown }) => {
    const lease = object as LeaseObject;
    if (type === 'ERROR') {
      gaps.push(JSON.stringify(object));
      return;
    }
    lastVersion = lease.metadata?.resourceVersion ?? lastVersion;
    if (type === 'BOOKMARK' || lease.metadata?.labels?.[leaseMemberLabel] === undefined) return;
    events += 1;
    const name = lease.metadata.name ?? '';
    const holder = lease.spec?.holderIdentity;
    if (type === 'DELETED' || !holder) holderOf.delete(name);
    else holderOf.set(name, holder);
    const counts = new Map<string, number>();
    for (const held of holderOf.values()) counts.set(held, (counts.get(held) ?? 0) + 1);
    for (const [held, count] of counts) mostHeld.set(held, Math.max(mostHeld.get(held) ?? 0, count));
  };
  const watchOn = async (): Promise<void> => {
    watches += 1;
    const { ended } = await kube.resource(leaseKind).in(namespace).watch(undefined, {
      resourceVersion: lastVersion,
      onEvent,
      signal: abort.signal,
    });
    void ended
      .then(() => (abort.signal.aborted ? undefined : watchOn()))
      .catch((error: unknown) => gaps.push(String(error)));
  };
  return {
    opened: watchOn(),
    mostHeld,
    holderOf,
    gaps,
    counts: () => ({ events, watches }),
    stop: () => abort.abort(),
  };
}

async function claimRetrying(vdi: Vdi, pool: string, identity: string): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await vdi.claim({ pool, identity, maxDesktopsPerUser: limit });
      return 'claimed';
    } catch (error) {
      if (!isVdiError(error)) throw error;
      if (!error.retryable || attempt > retries) return error.code;
    }
  }
}

describe('a per-user limit under racing claims', () => {
  it('never lets a user hold more than maxDesktopsPerUser: 200 claims by 20 users across 5 pools and 3 replicas', async () => {
    const namespace = await createTestNamespace(cluster(), 'limit-race');
    await Promise.all(pools.map((pool) => createPoolMembers(cluster(), namespace, pool, poolSize)));
    const clock = createTestClock(new Date());
    // each replica its own SDK instance, adapter and watch caches, as a broker process has
    const replicas = Array.from({ length: replicaCount }, () =>
      createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock }),
    );
    for (const replica of replicas) replica.startCaches([namespace]);
    await Promise.all(replicas.map((replica) => replica.waitForCacheSync()));
    const watcherKube = new KubeCluster(cluster().kubeConfig);
    const { resourceVersion } = await watcherKube.resource(leaseKind).in(namespace).listToWatch();
    const watcher = watchHeld(watcherKube, namespace, resourceVersion);
    await watcher.opened;

    // every user's claims in a shuffled order of the pools, each through the next replica round robin
    const claims = users.flatMap((user, userIndex) =>
      pools
        .flatMap((pool) => Array.from({ length: claimsPerPool }, () => pool))
        .map((pool, claimIndex) => ({ user, pool, order: (claimIndex * 7 + userIndex * 3) % 10 }))
        .sort((left, right) => left.order - right.order)
        .map(({ pool }, claimIndex) => ({
          user,
          pool,
          replica: replicas[(userIndex + claimIndex) % replicaCount] as Vdi,
        })),
    );
    expect(claims).toHaveLength(200);
    const started = performance.now();
    const outcomes = await Promise.all(
      claims.map(({ user, pool, replica }) => claimRetrying(replica, pool, user)),
    );
    const seconds = (performance.now() - started) / 1000;

    const tally = new Map<string, number>();
    for (const outcome of outcomes) tally.set(outcome, (tally.get(outcome) ?? 0) + 1);
    // the watcher missed nothing: it ends on what the apiserver holds now
    const final = await watcherKube.listLeases(namespace);
    const finalHolders = final
      .filter((lease) => lease.metadata.labels?.[leaseMemberLabel] !== undefined)
      .map((lease) => `${lease.metadata.name} ${lease.spec.holderIdentity}`)
      .sort();
    await waitFor(() => [...watcher.holderOf].map(([name, holder]) => `${name} ${holder}`).sort(), {
      describe: 'the watcher to show the claims the apiserver lists',
      until: (seen) => JSON.stringify(seen) === JSON.stringify(finalHolders),
    });
    watcher.stop();
    for (const replica of replicas) replica.stopCaches();
    expect(watcher.gaps).toEqual([]);

    const mostHeld = Object.fromEntries([...watcher.mostHeld].sort());
    const { events, watches } = watcher.counts();
    console.info(
      `user-limit race: ${claims.length} claims in ${seconds.toFixed(1)} s, outcomes ${JSON.stringify(Object.fromEntries(tally))}, ${events} Lease events in ${watches} watch(es), most held per user ${JSON.stringify(Object.values(mostHeld))}`,
    );
    expect(Object.keys(mostHeld).sort()).toEqual([...users].sort());
    for (const [user, most] of Object.entries(mostHeld)) expect(most, user).toBeLessThanOrEqual(limit);
    // the limit was reached, and what stopped the claims past it was the limit
    expect(Math.max(...Object.values(mostHeld))).toBe(limit);
    const expected = new Set(['claimed', 'USER_LIMIT_REACHED', 'NO_FREE_MEMBER']);
    expect(outcomes.filter((outcome) => !expected.has(outcome))).toEqual([]);
    expect(tally.get('USER_LIMIT_REACHED') ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
