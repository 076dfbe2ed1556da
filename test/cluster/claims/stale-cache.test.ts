import { afterEach, describe, expect, it } from 'vitest';
import { claimDesktop } from '../../../src/claims/claim-desktop.js';
import { membersBeingTaken, poolIndexOf, readPool } from '../../../src/claims/pool-reads.js';
import type { VdiContext } from '../../../src/context.js';
import { KubeCluster, type ListOptions } from '../../../src/kube/cluster.js';
import type { CachedObjects, WatchFrom } from '../../../src/kube/cluster-caches.js';
import type { WatchEvent } from '../../../src/kube/watch-stream.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createNamespaceClock, setSimulatorPaused } from '../../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The adapter, whose watches hold their events back while `holding`: its caches lag the cluster for real. */
class HeldWatchCluster extends KubeCluster {
  holding = false;
  readonly held: Array<() => void> = [];

  private hold(from: WatchFrom): WatchFrom {
    return {
      ...from,
      onEvent: (event: WatchEvent) => {
        if (this.holding) this.held.push(() => from.onEvent(event));
        else from.onEvent(event);
      },
    };
  }

  override watchToCache(
    cache: keyof CachedObjects,
    namespace: string,
    labelSelector: string | undefined,
    from: WatchFrom,
  ) {
    // the pools' ConfigMaps go on: the claims under test read Leases, VMs and VMIs
    return super.watchToCache(
      cache,
      namespace,
      labelSelector,
      cache === 'configMaps' ? from : this.hold(from),
    );
  }

  /** Delivers what was held, in order, and lets the watches through again. */
  catchUp(): void {
    this.holding = false;
    for (const deliver of this.held.splice(0)) deliver();
  }
}

const stopped: KubeCluster[] = [];
afterEach(() => {
  for (const kube of stopped.splice(0)) kube.stopCaches();
});

/**
 * A namespace with `size` members of pool `devpool` reporting Stopped, another process's SDK on it, and a context
 * of that process whose adapter is `kube`, its watch caches synced. With `namespaceClock` the SDK's clock is also
 * the simulator's for the namespace; with `stopDelayOfFirst` devpool-1's guest takes a minute to shut down, set
 * before the caches start, so that they hold together on it.
 */
async function setUpCached<K extends KubeCluster>(
  prefix: string,
  size: number,
  kube: K,
  options: { namespaceClock?: boolean; stopDelayOfFirst?: boolean } = {},
) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  if (options.stopDelayOfFirst) {
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
  }
  const clock = options.namespaceClock
    ? await createNamespaceClock(cluster().kubeConfig, namespace)
    : createTestClock();
  const other = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const ctx: VdiContext = { ...other.context, cluster: kube, backends: {} };
  ctx.backends.vm = createVmBackend(ctx);
  kube.startCaches([namespace], { clock: createTestClock() });
  stopped.push(kube);
  await kube.waitForCacheSync();
  return { namespace, clock, other, kube, ctx };
}

/** Another process's bob claims devpool-1, runs it and releases it, all held back from `kube`'s caches. */
async function useAndReleaseUnseen(kube: HeldWatchCluster, other: Vdi, namespace: string): Promise<void> {
  kube.holding = true;
  expect((await other.assign({ pool: 'devpool', identity: 'bob' })).member).toBe('devpool-1');
  await waitFor(async () => (await kube.getVmi(namespace, 'devpool-1'))?.status?.phase, {
    describe: "bob's instance to run",
    until: (phase) => phase === 'Running',
  });
  await other.release({ member: 'devpool-1', identity: 'bob' });
}

describe('a claim planned from a watch cache older than the cluster', () => {
  it("loses the Lease create for the member another process took since, takes another, and leaves the winner's Lease alone", async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'stale-cache',
      2,
      new HeldWatchCluster(cluster().kubeConfig),
    );
    const conflicts: string[] = [];
    ctx.events.on('claim-conflict', ({ desktopId, identity }) => conflicts.push(`${identity} ${desktopId}`));

    kube.holding = true;
    const bob = await other.assign({ pool: 'devpool', identity: 'bob' });
    expect(bob.member).toBe('devpool-1');
    const bobsLease = await other.context.cluster.getLease(namespace, 'corral-vdi-devpool-1');
    await waitFor(() => kube.held.length > 0, { describe: "bob's claim to be held back from the cache" });
    // the cache still shows devpool-1 free
    const view = await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool', { cached: true });
    expect(view).toEqual([]);

    const lists = kube.requestCounts.get('list') ?? 0;
    const alice = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    // planned devpool-1 from the cache, lost its Lease create, took devpool-2 from the same view
    expect(alice.member).toBe('devpool-2');
    expect(conflicts).toEqual([`alice vm/${namespace}/devpool-1`]);
    // its one list is the read of its own claims under its claimant Lease, not older than that Lease's write (the
    // held cache has not seen it, so the apiserver answers): the pool came from the synced caches
    expect((kube.requestCounts.get('list') ?? 0) - lists).toBe(1);
    const leases = await other.context.cluster.listLeases(namespace, 'corral.dev/vdi-pool=devpool');
    expect(leases.map((lease) => [lease.metadata.name, lease.spec.holderIdentity]).sort()).toEqual([
      ['corral-vdi-devpool-1', 'bob'],
      ['corral-vdi-devpool-2', 'alice'],
    ]);
    expect(await other.context.cluster.getLease(namespace, 'corral-vdi-devpool-1')).toEqual(bobsLease);

    kube.catchUp();
    await waitFor(() => kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool', { cached: true }), {
      describe: 'the cache to catch up with both claims',
      until: (cached) => cached.length === 2,
    });
  });
});

describe("a claim planned from a watch cache that has not seen the identity's claim of a moment ago", () => {
  it('renews that claim, with its session, and takes no second member', async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'stale-own',
      3,
      new HeldWatchCluster(cluster().kubeConfig),
    );

    kube.holding = true;
    const first = await other.claim({ pool: 'devpool', identity: 'alice' });
    // the cache shows no claim of alice's: the view offers her a free member
    expect(await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool', { cached: true })).toEqual([]);
    const again = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    expect(again).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    const leases = await other.context.cluster.listLeases(namespace);
    expect(leases.map((lease) => [lease.metadata.name, lease.spec.holderIdentity])).toEqual([
      [`corral-vdi-${first.member}`, 'alice'],
    ]);
    kube.catchUp();
  });
});

describe('a member won from a watch cache that has not seen the win yet', () => {
  it("is read fresh, and passed over or given back while the previous holder's instance is still going down", async () => {
    const { namespace, clock, other, kube, ctx } = await setUpCached(
      'stale-down',
      2,
      new HeldWatchCluster(cluster().kubeConfig),
      { namespaceClock: true },
    );
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });

    // another process: bob claims devpool-1 and lets it go; his guest takes a minute to shut down
    await useAndReleaseUnseen(kube, other, namespace);

    // the held caches show devpool-1 stopped and free: the claim reads it fresh, before its Lease write (and passes
    // it over) or after it (and gives the Lease back), as the stop shows in time
    const gets = kube.requestCounts.get('get') ?? 0;
    const alice = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    expect(alice.member).toBe('devpool-2');
    expect((kube.requestCounts.get('get') ?? 0) - gets).toBeGreaterThanOrEqual(1);
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();
    // still going down: asked to stop, bob's instance still there (KubeVirt's status may not say so yet)
    expect((await kube.getVm(namespace, 'devpool-1'))?.spec.runStrategy).not.toBe('Always');
    expect(await kube.getVmi(namespace, 'devpool-1')).toBeDefined();
    kube.catchUp();
    await clock.advance(60_000);
  });
});

describe('a member won free whose watch caches hold together and show it ready', () => {
  it('is presented and started at once, on the member as the caches show it, without reading it', async () => {
    const { namespace, kube, ctx } = await setUpCached(
      'cached-ready',
      1,
      new KubeCluster(cluster().kubeConfig),
    );
    const backend = ctx.backends.vm as NonNullable<typeof ctx.backends.vm>;
    const cached = backend.cachedMember?.({ namespace, member: 'devpool-1' });
    expect(cached).toMatchObject({ member: 'devpool-1', power: 'stopped', previousInstance: false });
    const gets = kube.requestCounts.get('get') ?? 0;
    const alice = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'random' },
    );
    expect(alice).toMatchObject({ member: 'devpool-1', owner: 'alice', warm: false });
    expect((kube.requestCounts.get('get') ?? 0) - gets).toBe(0);
    const vm = await kube.getVm(namespace, 'devpool-1');
    expect(vm?.spec.runStrategy).toBe('Always');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe('alice');
  });
});

describe('a member won from watch caches that hold together but lag the cluster', () => {
  it("is not presented on what they show: the write meets the changed member, which is read fresh, and the claim keeps its Lease and waits for the previous holder's instance to go before it hands the member out", async () => {
    const { namespace, clock, other, kube, ctx } = await setUpCached(
      'stale-exact',
      2,
      new HeldWatchCluster(cluster().kubeConfig),
      { namespaceClock: true, stopDelayOfFirst: true },
    );
    const backend = ctx.backends.vm as NonNullable<typeof ctx.backends.vm>;

    // another process: bob claims devpool-1 and lets it go; his guest takes a minute to shut down
    await useAndReleaseUnseen(kube, other, namespace);
    const bobsInstance = (await kube.getVmi(namespace, 'devpool-1'))?.metadata.uid;
    expect(bobsInstance).toBeDefined();
    // the held caches still show devpool-1 stopped, free and ready, and hold together
    expect(backend.cachedMember?.({ namespace, member: 'devpool-1' })).toMatchObject({
      power: 'stopped',
      previousInstance: false,
    });

    const claiming = claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    // alice's Lease is written on devpool-1 while bob's guest still goes down: every reader shows it nobody's
    const written = await waitFor(() => kube.getLease(namespace, 'corral-vdi-devpool-1'), {
      describe: "alice's Lease of devpool-1",
      until: (lease) => lease?.spec.holderIdentity === 'alice',
    });
    const listed = await other.listDesktops({ all: true });
    expect(listed.find((desktop) => desktop.member === 'devpool-1')?.owner).toBeUndefined();
    const vm = await kube.getVm(namespace, 'devpool-1');
    // not started for alice, and not presented: bob's instance is still there
    expect(vm?.spec.runStrategy).not.toBe('Always');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect((await kube.getVmi(namespace, 'devpool-1'))?.metadata.uid).toBe(bobsInstance);

    // bob's guest goes: the claim hands devpool-1 out under the Lease it wrote, never given back
    await clock.advance(60_000);
    const alice = await claiming;
    expect(alice).toMatchObject({
      member: 'devpool-1',
      owner: 'alice',
      sessionId: written?.metadata.annotations?.['corral.dev/vdi-session-id'],
    });
    const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
    expect(lease?.metadata.uid).toBe(written?.metadata.uid);
    const after = await kube.getVm(namespace, 'devpool-1');
    expect(after?.spec.runStrategy).toBe('Always');
    expect(after?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe('alice');
    const instance = await kube.getVmi(namespace, 'devpool-1');
    expect(instance?.metadata.uid).not.toBe(bobsInstance);
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-2')).toBeUndefined();
    kube.catchUp();
  });
});

describe('a member won from a watch cache that has not seen its deletion', () => {
  it('is read fresh, and given back while it is being deleted', async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'stale-deleting',
      1,
      new HeldWatchCluster(cluster().kubeConfig),
    );

    // another process deletes devpool-1; a finalizer keeps it in its deletion, which the held caches do not show,
    // and KubeVirt has not written `Terminating` yet (its controllers are paused), so the member still reads Stopped
    kube.holding = true;
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    const finalizer = 'test.corral.dev/hold';
    await other.context.cluster.patchVm(namespace, 'devpool-1', { metadata: { finalizers: [finalizer] } });
    await other.context.cluster.deleteVm(namespace, 'devpool-1');
    try {
      const claiming = claimDesktop(
        ctx,
        { pool: 'devpool', identity: 'alice' },
        { actor: undefined, order: 'lowest' },
      );
      await expect(claiming).rejects.toMatchObject({ code: 'NO_FREE_MEMBER' });
      expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();
      const vm = await kube.getVm(namespace, 'devpool-1');
      expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
      expect(vm?.spec.runStrategy).not.toBe('Always');
    } finally {
      kube.catchUp();
      await setSimulatorPaused(cluster().kubeConfig, namespace, false);
      await other.context.cluster.patchVm(namespace, 'devpool-1', { metadata: { finalizers: null } });
    }
  });
});

/** The adapter, whose quorum lists of the pool's Leases read the cluster at once but answer only on `release`. */
class SlowFreshCluster extends KubeCluster {
  private gate: Promise<void> | undefined;
  release: () => void = () => {};

  holdFreshLists(): void {
    this.gate = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  override async listLeases(namespace: string, labelSelector?: string, options: ListOptions = {}) {
    const leases = await super.listLeases(namespace, labelSelector, options);
    // only the pool's quorum list: a claim's read of its own claims goes through
    if (!options.cached && labelSelector === 'corral.dev/vdi-pool=devpool' && this.gate) await this.gate;
    return leases;
  }
}

describe('a fresh read of the pool that was served before a claim of this process took a member', () => {
  it('keeps that member passed over until a read shows its Lease', async () => {
    const namespace = await createTestNamespace(cluster(), 'fresh-late');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const kube = new SlowFreshCluster(cluster().kubeConfig);
    const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
    ctx.backends.vm = createVmBackend(ctx);
    const backend = ctx.backends.vm;
    const target = { namespace, pool: 'devpool' };

    kube.holdFreshLists();
    const fresh = readPool(ctx, backend, target, { cached: false });
    await waitFor(() => (kube.requestCounts.get('list') ?? 0) >= 3, {
      describe: 'the fresh read to be served',
    });
    // served already, answered later: alice's claim lands in between
    const alice = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    expect(membersBeingTaken(ctx, target)).toEqual(new Set([alice.member]));
    kube.release();
    const read = await fresh;
    expect(read.leases).toEqual([]);
    expect(membersBeingTaken(ctx, target)).toEqual(new Set([alice.member]));
    // a read that shows the Lease ends it
    await readPool(ctx, backend, target, { cached: false });
    expect(membersBeingTaken(ctx, target)).toEqual(new Set());
  });
});

/** The adapter, whose first quorum list of the identity's own claims answers only on `release`. */
class SlowOwnReadCluster extends KubeCluster {
  private gate: Promise<void> | undefined;
  held = false;
  release: () => void = () => {};

  holdOwnRead(): void {
    this.gate = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  override async listLeases(namespace: string, labelSelector?: string, options: ListOptions = {}) {
    const leases = await super.listLeases(namespace, labelSelector, options);
    const gate = this.gate;
    if (!options.cached && labelSelector?.includes('corral.dev/vdi-holder-hash') && gate) {
      this.gate = undefined;
      this.held = true;
      await gate;
    }
    return leases;
  }
}

describe('claims of one process planning from its synced watch caches', () => {
  it('never race each other for a member, though one of them is slow between its read and its Lease write', async () => {
    const { kube, ctx } = await setUpCached('own-race', 3, new SlowOwnReadCluster(cluster().kubeConfig));
    const conflicts: string[] = [];
    ctx.events.on('claim-conflict', ({ desktopId, identity }) => conflicts.push(`${identity} ${desktopId}`));
    const claim = (identity: string) =>
      claimDesktop(ctx, { pool: 'devpool', identity }, { actor: undefined, order: 'lowest' });

    kube.holdOwnRead();
    const alice = claim('alice');
    await waitFor(() => kube.held, { describe: "alice's read of her own claims to be held" });
    // two more claims of the same process finish meanwhile, each reading the cache after the last one's write
    const bob = await claim('bob');
    const carol = await claim('carol');
    kube.release();
    const members = [(await alice).member, bob.member, carol.member];
    expect(new Set(members).size).toBe(3);
    expect(conflicts).toEqual([]);
  });
});

describe('a won member read from watch caches of which only the VMs have seen the win', () => {
  it('takes the VM from its cache and reads only the VMI fresh', async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'seen-vm',
      1,
      new KubeCluster(cluster().kubeConfig),
    );
    const backend = createVmBackend(ctx);
    const ref = { namespace, member: 'devpool-1' };
    const gets = () => kube.requestCounts.get('get') ?? 0;
    // the win: any Lease write after which nothing of the member changed
    const won = await other.context.cluster.createLease(namespace, {
      metadata: { name: 'corral-vdi-devpool-1', labels: { 'corral.dev/vdi-pool': 'devpool' } },
      spec: { holderIdentity: 'bob' },
    });
    const since = won.metadata.resourceVersion ?? '';
    // neither cache has seen a change after the win: both are read fresh
    let before = gets();
    expect((await backend.readMember(ref, { seenSince: since }))?.member).toBe('devpool-1');
    expect(gets() - before).toBe(2);

    // a later change of the VM moves its cache past the win; no instance changed, so the VMIs' cache cannot tell
    const later = await other.context.cluster.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { 'example.com/note': 'seen' } },
    });
    await waitFor(
      () => kube.getVmAndVmiSeenSince(namespace, 'devpool-1', later.metadata.resourceVersion ?? ''),
      {
        describe: "the VMs' cache to see the change",
        until: (seen) => seen.vm?.object !== undefined,
      },
    );
    before = gets();
    const facts = await backend.readMember(ref, { seenSince: since });
    expect(facts?.resourceVersion).toBe(later.metadata.resourceVersion);
    expect(gets() - before).toBe(1);
  });
});

describe("claims in random order planned from the pool's index in the process's caches", () => {
  it('lose their Lease creates cleanly to claims the caches have not seen, and never make two holders', async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'index-stale',
      6,
      new HeldWatchCluster(cluster().kubeConfig),
    );
    const backend = ctx.backends.vm as NonNullable<typeof ctx.backends.vm>;
    const conflicts: string[] = [];
    ctx.events.on('claim-conflict', ({ desktopId }) => conflicts.push(desktopId.split('/')[2] ?? ''));
    expect(poolIndexOf(ctx, backend, { namespace, pool: 'devpool' })).toBeDefined();

    // another process takes three members, which the held caches never show to this one
    kube.holding = true;
    const theirs = await Promise.all(
      ['bob', 'carol', 'dave'].map(async (identity) => {
        const claim = await other.assign({ pool: 'devpool', identity });
        return [claim.member, await kube.getLease(namespace, `corral-vdi-${claim.member}`)] as const;
      }),
    );
    const ours = await Promise.allSettled(
      ['erin', 'frank', 'grace', 'heidi', 'ivan', 'judy'].map((identity) =>
        claimDesktop(ctx, { pool: 'devpool', identity }, { actor: undefined, order: 'random' }),
      ),
    );
    const won = ours.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.member] : []));
    const refused = ours.flatMap((outcome) =>
      outcome.status === 'rejected' ? [(outcome.reason as { code?: string }).code] : [],
    );
    expect(refused).toEqual(['NO_FREE_MEMBER', 'NO_FREE_MEMBER', 'NO_FREE_MEMBER']);
    const taken = theirs.map(([member]) => member);
    expect(new Set([...won, ...taken]).size).toBe(6);
    // every lost create was for a member the other process holds, whose Lease is as it wrote it
    for (const member of conflicts) expect(taken).toContain(member);
    for (const [member, lease] of theirs)
      expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toEqual(lease);
    const holders = (await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool')).map(
      (lease) => lease.spec.holderIdentity,
    );
    expect(holders).toHaveLength(6);
    expect(new Set(holders).size).toBe(6);
    kube.catchUp();
  });

  it('follows the caches: members claimed and given back elsewhere leave and rejoin the open ones', async () => {
    const { namespace, other, kube, ctx } = await setUpCached(
      'index-follow',
      2,
      new KubeCluster(cluster().kubeConfig),
    );
    const backend = ctx.backends.vm as NonNullable<typeof ctx.backends.vm>;
    const openNow = () =>
      poolIndexOf(ctx, backend, { namespace, pool: 'devpool' })
        ?.excerpt({ identity: 'alice', own: [], exclude: new Set(), now: ctx.clock.now(), random: () => 0 })
        ?.members.map((member) => member.member)
        .sort();
    expect(openNow()).toEqual(['devpool-1', 'devpool-2']);
    const bob = await other.assign({ pool: 'devpool', identity: 'bob' });
    await waitFor(openNow, { describe: "the index to see bob's claim", until: (open) => open?.length === 1 });
    expect(openNow()).not.toContain(bob.member);
    await other.release({ member: bob.member, identity: 'bob' });
    await waitFor(openNow, {
      describe: "the index to see bob's member stopped and free again",
      until: (open) => open?.length === 2,
    });
    expect(kube.isCaching(namespace)).toBe(true);
  });
});
