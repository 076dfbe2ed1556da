import { describe, expect, it } from 'vitest';
import { claimantLeaseName, claimantStaleMs } from '../../../src/claims/claimant-lock.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { leaseKind } from '../../../src/kube/resource-kinds.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { caught, createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();
const image = 'ghcr.io/acme/devbox:1.4';
const alice = 'alice@example.com';

/** VM pools `dev` and `gpu` of two members each and a container pool `devbox` of two, in a fresh namespace. */
async function setUp(prefix: string): Promise<{ namespace: string; vdi: Vdi; vdiOf: () => Vdi }> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock(new Date());
  // a second SDK instance is another process, as a second broker replica is
  const vdiOf = () => createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const vdi = vdiOf();
  await Promise.all([
    createPoolMembers(cluster(), namespace, 'dev', 2),
    createPoolMembers(cluster(), namespace, 'gpu', 2),
    vdi.applyCtPool({ spec: { name: 'devbox', image, size: 2 } }),
  ]);
  await vdi.reconcileCtPool({ name: 'devbox' });
  return { namespace, vdi, vdiOf };
}

/** The names of the namespace's Leases: the members' claims, and any claimant Lease left behind. */
async function leaseNames(vdi: Vdi, namespace: string): Promise<string[]> {
  return (await vdi.context.cluster.listLeases(namespace)).map((lease) => lease.metadata.name ?? '').sort();
}

/**
 * What a watch of the namespace's Leases sees while `run` runs, as `<event> <name>`: a marker Lease written after it
 * ends shows that every event before it arrived.
 */
async function leaseEventsDuring(namespace: string, run: () => Promise<unknown>): Promise<string[]> {
  const kube = new KubeCluster(cluster().kubeConfig);
  const { resourceVersion } = await kube.resource(leaseKind).in(namespace).listToWatch();
  const events: string[] = [];
  const abort = new AbortController();
  const marker = `watch-marker-${Date.now()}`;
  let markerSeen = false;
  await kube
    .resource(leaseKind)
    .in(namespace)
    .watch(undefined, {
      resourceVersion,
      signal: abort.signal,
      onEvent: ({ type, object }) => {
        const name = (object as LeaseObject).metadata?.name ?? '';
        if (name === marker) markerSeen = true;
        else if (type !== 'BOOKMARK' && !markerSeen) events.push(`${type} ${name}`);
      },
    });
  try {
    await run();
    await kube.createLease(namespace, { metadata: { name: marker, namespace }, spec: {} });
    await waitFor(() => markerSeen, { describe: 'the watch to see the marker Lease' });
    return events;
  } finally {
    abort.abort();
  }
}

describe('a per-user limit of the front end (the broker-wide maxDesktopsPerUser)', () => {
  it.each([
    ['from the apiserver', false],
    ["from the process's synced watch caches", true],
  ])(
    'refuses the claim past the limit with USER_LIMIT_REACHED naming the desktops held, VM and container alike, and writes no Lease at all, reading %s',
    async (_, caches) => {
      const { namespace, vdi } = await setUp('limit-broker');
      if (caches) {
        vdi.startCaches([namespace]);
        await vdi.waitForCacheSync();
      }
      const dev = await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 2 });
      const devbox = await vdi.claim({ pool: 'devbox', kind: 'ct', identity: alice, maxDesktopsPerUser: 2 });
      let refusal: Awaited<ReturnType<typeof caught>> | undefined;
      const written = await leaseEventsDuring(namespace, async () => {
        refusal = await caught(vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 2 }));
      });
      vdi.stopCaches();
      expect(written).toEqual([]);
      if (refusal === undefined) throw new Error('the claim was not refused');
      expect(refusal.code).toBe('USER_LIMIT_REACHED');
      expect(refusal.details).toEqual({ identity: alice, limit: 2, held: [devbox.id, dev.id] });
      expect(refusal.message).toBe(
        `${alice} may hold 2 desktops at a time and holds ${devbox.id}, ${dev.id}; release one, then claim again.`,
      );
      // the limit is per identity: another user claims as before
      expect((await vdi.claim({ pool: 'gpu', identity: 'bob', maxDesktopsPerUser: 2 })).owner).toBe('bob');
    },
  );

  it("shows a watcher of a claim refused in its turn (no free member) only the user's claimant Leases, created and deleted", async () => {
    const { namespace, vdi } = await setUp('limit-observed');
    await vdi.claim({ pool: 'gpu', identity: 'bob' });
    await vdi.claim({ pool: 'gpu', identity: 'carol' });
    const poolLock = claimantLeaseName({ pool: 'gpu', identity: alice });
    const userLock = claimantLeaseName({ identity: alice });
    const written = await leaseEventsDuring(namespace, async () => {
      expect((await caught(vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 2 }))).code).toBe(
        'NO_FREE_MEMBER',
      );
    });
    // each fresh read of the pool is a turn of its own
    expect(new Set(written)).toEqual(
      new Set([`ADDED ${userLock}`, `ADDED ${poolLock}`, `DELETED ${poolLock}`, `DELETED ${userLock}`]),
    );
  });

  it('returns a desktop the identity already holds in the pool, the same session, at the limit', async () => {
    const { vdi } = await setUp('limit-again');
    const dev = await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 });
    const again = await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 });
    expect(again).toMatchObject({ id: dev.id, sessionId: dev.sessionId, retried: true });
  });

  it('lets the identity claim again once it released a desktop', async () => {
    const { vdi } = await setUp('limit-release');
    const dev = await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 });
    expect((await caught(vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 1 }))).code).toBe(
      'USER_LIMIT_REACHED',
    );
    await vdi.release({ member: dev.member, identity: alice });
    expect((await vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 1 })).owner).toBe(alice);
  });

  it('limits an assign as a claim, and refuses a claim that would wait at the limit before it joins the queue', async () => {
    const { namespace, vdi } = await setUp('limit-assign');
    await vdi.assign({ pool: 'dev', identity: alice, actor: 'admin', maxDesktopsPerUser: 1 });
    expect(
      (await caught(vdi.assign({ pool: 'gpu', identity: alice, actor: 'admin', maxDesktopsPerUser: 1 })))
        .code,
    ).toBe('USER_LIMIT_REACHED');
    // gpu has no free member: the claim would wait for one, but may not hold it anyway
    await vdi.claim({ pool: 'gpu', identity: 'bob' });
    await vdi.claim({ pool: 'gpu', identity: 'carol' });
    const before = await leaseNames(vdi, namespace);
    const waited = await caught(
      vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 1, wait: true }),
    );
    expect(waited.code).toBe('USER_LIMIT_REACHED');
    expect(await leaseNames(vdi, namespace)).toEqual(before);
  });

  it('ends a wait under way with USER_LIMIT_REACHED when the user reached the limit elsewhere meanwhile', async () => {
    const { vdi } = await setUp('limit-waiting');
    const bobs = await vdi.claim({ pool: 'gpu', identity: 'bob' });
    await vdi.claim({ pool: 'gpu', identity: 'carol' });
    const waiting = caught(vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 1, wait: true }));
    await waitFor(() => vdi.waitPosition({ pool: 'gpu', identity: alice }), {
      describe: 'alice to wait for gpu',
    });
    await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 });
    await vdi.release({ member: bobs.member, identity: 'bob' });
    expect((await waiting).code).toBe('USER_LIMIT_REACHED');
    expect(await vdi.waitPosition({ pool: 'gpu', identity: alice })).toBeUndefined();
  });

  it('gives two claims of one identity on two pools at once, through two processes, no more than the limit', async () => {
    const { namespace, vdi, vdiOf } = await setUp('limit-twin');
    const replicas = [vdi, vdiOf()];
    const outcomes = await Promise.allSettled([
      replicas[0]?.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 }),
      replicas[1]?.claim({ pool: 'devbox', kind: 'ct', identity: alice, maxDesktopsPerUser: 1 }),
    ]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = outcomes.find((outcome) => outcome.status === 'rejected');
    expect(rejected?.reason).toMatchObject({ code: 'USER_LIMIT_REACHED' });
    const held = (await vdi.context.cluster.listLeases(namespace)).filter(
      (lease) => lease.spec.holderIdentity === alice,
    );
    expect(held).toHaveLength(1);
  });

  it('takes over the identity claimant Lease a process that died left behind, and claims', async () => {
    const { namespace, vdi } = await setUp('limit-crash');
    // what a limited claim that died between taking its turn and writing a member's Lease leaves behind
    await vdi.context.cluster.createLease(namespace, {
      metadata: { name: claimantLeaseName({ identity: alice }), namespace },
      spec: { holderIdentity: alice },
    });
    const started = performance.now();
    const dev = await vdi.claim({ pool: 'dev', identity: alice, maxDesktopsPerUser: 1 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(claimantStaleMs);
    expect(await leaseNames(vdi, namespace)).toEqual([`corral-vdi-${dev.member}`]);
  });

  it('takes no identity claimant Lease for a claim without a limit', async () => {
    const { namespace, vdi } = await setUp('limit-none');
    // a left identity claimant Lease would hold a limited claim for seconds; one without a limit does not wait
    await vdi.context.cluster.createLease(namespace, {
      metadata: { name: claimantLeaseName({ identity: alice }), namespace },
      spec: { holderIdentity: alice },
    });
    const started = performance.now();
    await vdi.claim({ pool: 'dev', identity: alice });
    await vdi.claim({ pool: 'gpu', identity: alice, maxDesktopsPerUser: 0 });
    expect(performance.now() - started).toBeLessThan(claimantStaleMs);
  });
});

describe("a pool's own maxDesktopsPerUser", () => {
  it('refuses a self-service claim of a VM pool to a user who holds that many desktops anywhere in the namespace', async () => {
    const { vdi } = await setUp('limit-vm-pool');
    await setPoolSettings(vdi.context, { name: 'gpu', maxDesktopsPerUser: 1 });
    const devbox = await vdi.claim({ pool: 'devbox', kind: 'ct', identity: alice, groups: [] });
    const refusal = await caught(vdi.claim({ pool: 'gpu', identity: alice, groups: [] }));
    expect(refusal.code).toBe('USER_LIMIT_REACHED');
    expect(refusal.details).toMatchObject({ limit: 1, held: [devbox.id] });
    // the other pools set no limit
    expect((await vdi.claim({ pool: 'dev', identity: alice, groups: [] })).owner).toBe(alice);
    // an operator's own claim (no groups) is trusted, and reads no pool setting
    expect((await vdi.claim({ pool: 'gpu', identity: alice })).owner).toBe(alice);
  });

  it("refuses a claim of a container pool by its spec's limit, and the lower of the pool's and the front end's holds", async () => {
    const { vdi } = await setUp('limit-ct-pool');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 2, maxDesktopsPerUser: 2 } });
    await vdi.claim({ pool: 'dev', identity: alice, groups: [] });
    const lower = await caught(
      vdi.claim({ pool: 'devbox', kind: 'ct', identity: alice, groups: [], maxDesktopsPerUser: 1 }),
    );
    expect(lower.details).toMatchObject({ limit: 1 });
    await vdi.claim({ pool: 'gpu', identity: alice, groups: [] });
    const pools = await caught(
      vdi.claim({ pool: 'devbox', kind: 'ct', identity: alice, groups: [], maxDesktopsPerUser: 5 }),
    );
    expect(pools.code).toBe('USER_LIMIT_REACHED');
    expect(pools.details).toMatchObject({ limit: 2 });
  });

  it('is set, shown and cleared with 0 through the pool settings, and a bad value is refused', async () => {
    const { vdi } = await setUp('limit-settings');
    await setPoolSettings(vdi.context, { name: 'gpu', maxDesktopsPerUser: 3 });
    expect((await vdi.getPool({ name: 'gpu' })).settings.maxDesktopsPerUser).toBe(3);
    await setPoolSettings(vdi.context, { name: 'gpu', maxDesktopsPerUser: 0 });
    expect((await vdi.getPool({ name: 'gpu' })).settings.maxDesktopsPerUser).toBeUndefined();
    for (const bad of [-1, 1.5]) {
      expect(
        (await caught(setPoolSettings(vdi.context, { name: 'gpu', maxDesktopsPerUser: bad }))).code,
      ).toBe('INVALID_INPUT');
    }
    const ct = await caught(
      vdi.applyCtPool({ spec: { name: 'devbox', image, size: 2, maxDesktopsPerUser: -1 } }),
    );
    expect(ct.code).toBe('INVALID_INPUT');
  });
});
