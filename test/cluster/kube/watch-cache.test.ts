import { AuthorizationV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { leaseMemberLabel, leasePoolLabel } from '../../../src/keys.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { type CacheSources, startNamespaceCaches } from '../../../src/kube/cluster-caches.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { toVmMemberFacts } from '../../../src/vm/vm-member-facts.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { bindDocumentedRole } from '../rbac/documented-role.js';

const cluster = useSharedCluster();
const started: KubeCluster[] = [];

afterEach(() => {
  for (const kube of started.splice(0)) kube.stopCaches();
});

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

async function cachedCluster(namespace: string, kube = new KubeCluster(cluster().kubeConfig)) {
  kube.startCaches([namespace], { clock: createTestClock() });
  started.push(kube);
  await kube.waitForCacheSync();
  return kube;
}

const lists = (kube: KubeCluster) => kube.requestCounts.get('list') ?? 0;
const holders = (leases: LeaseObject[]) =>
  leases.map((lease) => [lease.metadata.name, lease.spec.holderIdentity]).sort();

describe('the watch caches of a namespace', () => {
  it("list once, then follow another process's creates, changes and deletes, answering cached lists without a request", async () => {
    const namespace = await createTestNamespace(cluster(), 'cache');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const other = new KubeCluster(cluster().kubeConfig);
    await other.createLease(namespace, claimLease('devpool-1', 'bob'));
    const kube = await cachedCluster(namespace);
    // one list each of Leases, VMs, VMIs and the pools' ConfigMaps, then only watches
    expect(lists(kube)).toBe(4);
    expect(kube.requestCounts.get('watch')).toBe(4);
    const cached = () => kube.listLeases(namespace, `${leasePoolLabel}=devpool`, { cached: true });
    expect(holders(await cached())).toEqual([['corral-vdi-devpool-1', 'bob']]);
    expect((await kube.listVms(namespace, `${leasePoolLabel}=devpool`, { cached: true })).length).toBe(2);
    const versionBefore = kube.cachesOf(namespace)?.leases.resourceVersion();

    const alices = await other.createLease(namespace, claimLease('devpool-2', 'alice'));
    await waitFor(cached, {
      describe: "alice's Lease to reach the cache",
      until: (leases) => leases.length === 2,
    });
    await other.replaceLease(namespace, {
      ...alices,
      spec: { ...alices.spec, holderIdentity: 'carol' },
    });
    await waitFor(cached, {
      describe: "carol's change to reach the cache",
      until: (leases) => leases.some((lease) => lease.spec.holderIdentity === 'carol'),
    });
    const bobs = await other.getLease(namespace, 'corral-vdi-devpool-1');
    await other.deleteLease(namespace, 'corral-vdi-devpool-1', { uid: bobs?.metadata.uid ?? '' });
    await waitFor(cached, {
      describe: "bob's deleted Lease to leave the cache",
      until: (leases) => leases.length === 1,
    });
    expect(holders(await cached())).toEqual([['corral-vdi-devpool-2', 'carol']]);
    expect(Number(kube.cachesOf(namespace)?.leases.resourceVersion())).toBeGreaterThan(Number(versionBefore));
    // every read above came from the cache
    expect(lists(kube)).toBe(4);
  });

  it('keep no managedFields nor anything else a member is not read from, and tell the same facts as fresh reads', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-kept');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const other = new KubeCluster(cluster().kubeConfig);
    await other.createLease(namespace, claimLease('devpool-1', 'bob'));
    await other.patchVm(namespace, 'devpool-1', { spec: { runStrategy: 'Always' } });
    const freshVmi = await waitForRunningVmi(other, namespace, 'devpool-1');
    const freshVm = await other.getVm(namespace, 'devpool-1');
    const kube = await cachedCluster(namespace);
    const caches = kube.cachesOf(namespace);
    const kept = [
      ...(caches?.leases.list() ?? []),
      ...(caches?.vms.list(leasePoolLabel) ?? []),
      ...(caches?.vmis.list() ?? []),
    ];
    expect(kept.length).toBe(4);
    // the apiserver lists every object with them: the caches dropped them
    expect(freshVm?.metadata).toHaveProperty('managedFields');
    for (const object of kept) expect(object.metadata).not.toHaveProperty('managedFields');
    const cachedVm = caches?.vms.get('devpool-1');
    expect(cachedVm?.spec.template?.spec).not.toHaveProperty('volumes');
    expect(cachedVm?.metadata.resourceVersion).toBe(freshVm?.metadata.resourceVersion);
    if (!cachedVm || !freshVm) throw new Error('devpool-1 is missing');
    expect(toVmMemberFacts(cachedVm, caches?.vmis.get('devpool-1'))).toEqual(
      toVmMemberFacts(freshVm, freshVmi),
    );
    // a Lease written back from the cache keeps the apiserver's managedFields of it
    const cachedLease = caches?.leases.get('corral-vdi-devpool-1');
    if (!cachedLease) throw new Error('the Lease of devpool-1 is missing');
    await kube.replaceLease(namespace, {
      ...cachedLease,
      spec: { ...cachedLease.spec, holderIdentity: 'carol' },
    });
    const written = await other.getLease(namespace, 'corral-vdi-devpool-1');
    expect(written?.spec.holderIdentity).toBe('carol');
    const managedFields = (written?.metadata as { managedFields?: unknown[] } | undefined)?.managedFields;
    expect(managedFields?.length).toBeGreaterThan(0);
  });

  it('read a namespace of more than one page as several pages of one list', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-pages');
    const other = new KubeCluster(cluster().kubeConfig);
    const leases = 501;
    for (let first = 0; first < leases; first += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, leases - first) }, (_, offset) =>
          other.createLease(namespace, claimLease(`devpool-${first + offset + 1}`, 'bob')),
        ),
      );
    }
    const kube = await cachedCluster(namespace);
    // two pages of Leases (500 and 1), one each of VMs, VMIs and the pools' ConfigMaps
    expect(lists(kube)).toBe(5);
    expect((await kube.listLeases(namespace, undefined, { cached: true })).length).toBe(leases);
  });

  it('answer a VM and its VMI by name without a request only once they have seen the resourceVersion asked for', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-since');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const kube = await cachedCluster(namespace);
    // the simulator writes the new VM's status a moment after its create: the Lease comes after that write
    await waitFor(() => kube.listVms(namespace, `${leasePoolLabel}=devpool`, { cached: true }), {
      describe: 'the cached VM to show Stopped',
      until: (vms) => vms[0]?.status?.printableStatus === 'Stopped',
    });
    const other = new KubeCluster(cluster().kubeConfig);
    const lease = await other.createLease(namespace, claimLease('devpool-1', 'bob'));
    const since = lease.metadata.resourceVersion ?? '';
    const gets = () => kube.requestCounts.get('get') ?? 0;
    const before = gets();
    // nothing of the VMs or VMIs changed after the Lease: their caches cannot tell they are that recent
    expect(kube.getVmAndVmiSeenSince(namespace, 'devpool-1', since)).toEqual({
      vm: undefined,
      vmi: undefined,
    });
    await other.patchVm(namespace, 'devpool-1', { spec: { runStrategy: 'Always' } });
    const seen = await waitFor(() => kube.getVmAndVmiSeenSince(namespace, 'devpool-1', since), {
      describe: 'the VM and VMI caches to see an event after the Lease',
      until: (found) => found.vm?.object !== undefined && found.vmi?.object !== undefined,
    });
    expect(seen.vm?.object?.metadata.name).toBe('devpool-1');
    expect(seen.vmi?.object?.metadata.name).toBe('devpool-1');
    // a VM the caches do not hold, once they have seen the version, is none of theirs: the caller reads it fresh
    expect(kube.getVmAndVmiSeenSince(namespace, 'devpool-2', since)).toEqual({
      vm: { object: undefined },
      vmi: { object: undefined },
    });
    expect(gets()).toBe(before);
  });

  it('answer a list not older than a resourceVersion without a request once they have seen it, else ask the apiserver', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-not-older');
    const kube = await cachedCluster(namespace);
    const other = new KubeCluster(cluster().kubeConfig);
    const selector = `${leasePoolLabel}=devpool`;
    const bobs = await other.createLease(namespace, claimLease('devpool-1', 'bob'));
    const since = bobs.metadata.resourceVersion ?? '';
    // without a cache the apiserver answers, from its own watch cache, and shows it
    expect(holders(await other.listLeases(namespace, selector, { notOlderThan: since }))).toEqual([
      ['corral-vdi-devpool-1', 'bob'],
    ]);
    await waitFor(() => kube.cachesOf(namespace)?.leases.listSeenSince(selector, since), {
      describe: "the cache to see bob's Lease",
      until: (seen) => seen !== undefined,
    });
    const before = lists(kube);
    expect(holders(await kube.listLeases(namespace, selector, { notOlderThan: since }))).toEqual([
      ['corral-vdi-devpool-1', 'bob'],
    ]);
    expect(lists(kube)).toBe(before);
    // a version the cache has not seen yet goes to the apiserver
    const later = String(BigInt(kube.cachesOf(namespace)?.leases.resourceVersion() ?? '0') + 1n);
    expect(kube.cachesOf(namespace)?.leases.listSeenSince(selector, later)).toBeUndefined();
  });

  it("wait a moment for the event of this process's own write before a list not older than it, and ask the apiserver after that", async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-own-event');
    const kube = await cachedCluster(namespace);
    const selector = `${leasePoolLabel}=devpool`;
    // a Lease of no pool, as a claimant Lease is: only its own event moves the cache past its version
    const now = new Date().toISOString();
    const written = await kube.createLease(namespace, {
      metadata: { name: 'corral-vdi-claimant-test' },
      spec: { holderIdentity: 'alice', acquireTime: now, renewTime: now },
    });
    const since = written.metadata.resourceVersion ?? '';
    const before = lists(kube);
    expect(await kube.listLeases(namespace, selector, { notOlderThan: since, cacheWaitMs: 30_000 })).toEqual(
      [],
    );
    expect(lists(kube)).toBe(before);
    // a write in another namespace makes no event here: the wait ends at its bound, and the apiserver answers
    const elsewhere = await createTestNamespace(cluster(), 'cache-elsewhere');
    const far = await kube.createLease(elsewhere, claimLease('devpool-1', 'bob'));
    const answer = await kube.listLeases(namespace, selector, {
      notOlderThan: far.metadata.resourceVersion ?? '',
      cacheWaitMs: 50,
    });
    expect(answer).toEqual([]);
    expect(lists(kube)).toBe(before + 1);
  });

  it('answer only the selectors they hold, and quorum reads always go to the apiserver', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-select');
    const kube = await cachedCluster(namespace);
    const before = lists(kube);
    await kube.listLeases(namespace, `${leasePoolLabel}=devpool,${leaseMemberLabel}=devpool-1`, {
      cached: true,
    });
    // the Lease cache holds every Lease of the namespace
    await kube.listLeases(namespace, undefined, { cached: true });
    expect(lists(kube)).toBe(before);
    // every VM of the namespace is wider than the pool members the VM cache holds
    await kube.listVms(namespace, undefined, { cached: true });
    await kube.listLeases(namespace, `${leasePoolLabel} in (devpool)`, { cached: true });
    await kube.listLeases(namespace, `${leasePoolLabel}=devpool`);
    expect(lists(kube)).toBe(before + 3);
  });

  it("show this process's own writes at once, before their events arrive", async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-own');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const kube = await cachedCluster(namespace);
    const seen: string[] = [];
    kube.cachesOf(namespace)?.leases.onChange(({ type, object }) => {
      seen.push(`${type} ${object.spec.holderIdentity}`);
    });
    const created = await kube.createLease(namespace, claimLease('devpool-1', 'alice'));
    // told before the create resolved: the answer of the write, not a watch event
    expect(seen).toEqual(['added alice']);
    expect(holders(await kube.listLeases(namespace, leasePoolLabel, { cached: true }))).toEqual([
      ['corral-vdi-devpool-1', 'alice'],
    ]);
    const patched = await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { 'corral.dev/vdi-assigned-to': 'alice' } },
    });
    const [vm] = await kube.listVms(namespace, leasePoolLabel, { cached: true });
    expect(vm?.metadata.resourceVersion).toBe(patched.metadata.resourceVersion);
    await kube.deleteLease(namespace, 'corral-vdi-devpool-1', { uid: created.metadata.uid ?? '' });
    expect(await kube.listLeases(namespace, leasePoolLabel, { cached: true })).toEqual([]);
    // the late events of the Lease do not bring it back
    await waitFor(() => seen.length >= 2, { describe: 'the delete to be told' });
    const other = new KubeCluster(cluster().kubeConfig);
    await other.createLease(namespace, claimLease('devpool-2', 'bob'));
    await waitFor(() => kube.listLeases(namespace, leasePoolLabel, { cached: true }), {
      describe: "bob's Lease to reach the cache, after every event of alice's",
      until: (leases) => leases.length === 1,
    });
    expect(holders(await kube.listLeases(namespace, leasePoolLabel, { cached: true }))).toEqual([
      ['corral-vdi-devpool-2', 'bob'],
    ]);
  });

  it('answer a list asked again with nothing changed from what they kept, and a change in the very next list', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-kept');
    const kube = await cachedCluster(namespace);
    const alices = await kube.createLease(namespace, claimLease('devpool-1', 'alice'));
    const cached = () => kube.listLeases(namespace, `${leasePoolLabel}=devpool`, { cached: true });
    const first = await cached();
    // a caller that changes its answer does not change the next one
    first.pop();
    const again = await cached();
    expect(holders(again)).toEqual([['corral-vdi-devpool-1', 'alice']]);
    expect(again).not.toBe(first);
    await kube.createLease(namespace, claimLease('devpool-2', 'bob'));
    expect(holders(await cached())).toEqual([
      ['corral-vdi-devpool-1', 'alice'],
      ['corral-vdi-devpool-2', 'bob'],
    ]);
    await kube.deleteLease(namespace, 'corral-vdi-devpool-1', { uid: alices.metadata.uid ?? '' });
    expect(holders(await cached())).toEqual([['corral-vdi-devpool-2', 'bob']]);
    expect(lists(kube)).toBe(4);
  });

  it('back off after a refused watch, reject the sync with FORBIDDEN, and sync once the watch is granted', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-rbac');
    const missing = {
      scope: 'namespace',
      group: 'coordination.k8s.io',
      resource: 'leases',
      verb: 'watch',
    } as const;
    const { kubeConfig, unbind } = await bindDocumentedRole(cluster(), {
      namespace,
      user: `cache-${namespace}`,
      missing,
    });
    try {
      const kube = new KubeCluster(kubeConfig, { retries: 0 });
      const waits: number[] = [];
      let wake: () => void = () => {};
      const failures: string[] = [];
      kube.startCaches([namespace], {
        clock: createTestClock(),
        sleep: (ms) => {
          waits.push(ms);
          return new Promise<void>((resolve) => {
            wake = resolve;
          });
        },
        onFailure: (error, cached) => failures.push(`${cached}: ${error.code}`),
      });
      started.push(kube);
      await waitFor(() => waits.length === 1, { describe: 'the first backoff' });
      const refused = await kube.waitForCacheSync().catch((error: unknown) => error);
      expect(isVdiError(refused, 'FORBIDDEN')).toBe(true);
      expect((refused as Error).message).toContain('cannot watch resource "leases"');
      expect(failures).toEqual([`Leases in ${namespace}: FORBIDDEN`]);
      // unsynced, a cached list goes to the apiserver
      const before = lists(kube);
      await kube.listLeases(namespace, leasePoolLabel, { cached: true });
      expect(lists(kube)).toBe(before + 1);

      wake();
      await waitFor(() => waits.length === 2, { describe: 'the second backoff' });
      expect(waits).toEqual([500, 1000]);

      await grantLeaseWatch(namespace, `cache-${namespace}`);
      wake();
      await waitFor(() => kube.cachesOf(namespace)?.leases.isSynced(), {
        describe: 'the Lease cache to sync once its watch is granted',
      });
      await kube.waitForCacheSync();
      expect(waits).toEqual([500, 1000]);
    } finally {
      await unbind();
    }
  });

  it('open no watch when stopped while their first list is in flight, so a stopped process can exit', async () => {
    const namespace = await createTestNamespace(cluster(), 'cache-stop');
    const kube = new KubeCluster(cluster().kubeConfig);
    let releaseList: () => void = () => {};
    const listHeld = new Promise<void>((resolve) => {
      releaseList = resolve;
    });
    const listed: Promise<unknown>[] = [];
    const watched: string[] = [];
    const sources: CacheSources = {
      listToCache: (cache, ns, selector) => {
        const list = listHeld.then(() => kube.listToCache(cache, ns, selector));
        listed.push(list);
        return list;
      },
      watchToCache: (cache, ns, selector, from) => {
        watched.push(cache);
        return kube.watchToCache(cache, ns, selector, from);
      },
    };
    const caches = startNamespaceCaches(sources, namespace, { clock: createTestClock() });
    for (const cache of Object.values(caches)) cache.stop();
    releaseList();
    await Promise.all(listed);
    // the rounds go on from the lists' answers within a few turns of the event loop
    for (let turn = 0; turn < 10; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(listed).toHaveLength(4);
    expect(watched).toEqual([]);
  });
});

async function grantLeaseWatch(namespace: string, user: string): Promise<void> {
  const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'lease-watch' },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['watch'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'lease-watch' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lease-watch' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
  const reviews = cluster().kubeConfig.makeApiClient(AuthorizationV1Api);
  await waitFor(
    async () =>
      (
        await reviews.createSubjectAccessReview({
          body: {
            spec: {
              user,
              resourceAttributes: {
                group: 'coordination.k8s.io',
                resource: 'leases',
                verb: 'watch',
                namespace,
              },
            },
          },
        })
      ).status?.allowed === true,
    { describe: `${user} to be granted watch on leases` },
  );
}
