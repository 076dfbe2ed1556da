import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { planCapacity } from '../../../src/capacity/capacity-service.js';
import type { VdiContext } from '../../../src/context.js';
import { defaultCloneTimeoutMs } from '../../../src/desktop-backend.js';
import type { VdiEvents } from '../../../src/events.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import type { VirtualMachine, VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { createPool, deletePool, getPool, listPools, resizePool } from '../../../src/pools/pool-service.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { setPermittedHostDevices } from '../../../src/testing/kubevirt/nodes.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { recreateMember } from '../../../src/vm-pools/recreate-member.js';
import { CloneFaultCluster } from '../../support/clone-faults.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';

const cluster = useSharedCluster();

/** The clone-fault adapter, with a record of the clone phases the code under test read. */
class FaultyCluster extends CloneFaultCluster {
  readonly clonePhasesRead: Array<string | undefined> = [];
  /** Clones the code under test reads as still restoring, whatever they show: its reads lag. */
  readonly seenUnfinished = new Set<string>();

  override async getClone(namespace: string, name: string): Promise<VirtualMachineClone | undefined> {
    const found = await super.getClone(namespace, name);
    const clone =
      found && this.seenUnfinished.has(name)
        ? { ...found, status: { ...found.status, phase: 'RestoreInProgress' as const } }
        : found;
    this.clonePhasesRead.push(clone?.status?.phase);
    return clone;
  }
}

interface Setup {
  ctx: VdiContext;
  kube: FaultyCluster;
  namespace: string;
  audit: MemoryAuditSink;
  progress: Array<VdiEvents['pool-progress'][0]>;
}

async function setUp(prefix: string, faults: Record<string, Record<string, string>> = {}): Promise<Setup> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const audit = new MemoryAuditSink();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, audit, clock: createTestClock() });
  const kube = new FaultyCluster(cluster().kubeConfig, faults);
  const ctx: VdiContext = { ...vdi.context, cluster: kube };
  const progress: Setup['progress'] = [];
  ctx.events.on('pool-progress', (event) => progress.push(event));
  return { ctx, kube, namespace, audit, progress };
}

function goldenVm(
  name: string,
  gpus: string[] = [],
  extra: Partial<VirtualMachine['metadata']> = {},
): VirtualMachine {
  return {
    metadata: {
      name,
      labels: { app: 'desktop', 'corral.dev/vdi-assigned-to': 'someone' },
      annotations: { 'corral.dev/vdi-assigned-to': 'someone', description: 'golden' },
      ...extra,
    },
    spec: {
      running: false,
      template: {
        metadata: { labels: { app: 'desktop', 'corral.dev/vdi-assigned-to': 'someone' } },
        spec: {
          domain: {
            memory: { guest: '128Mi' },
            devices: { gpus: gpus.map((deviceName, index) => ({ name: `gpu${index + 1}`, deviceName })) },
          },
        },
      },
    },
  };
}

async function poolVms(kube: KubeCluster, namespace: string, pool: string): Promise<string[]> {
  return (await kube.listVms(namespace, `corral.dev/vdi-pool=${pool}`))
    .map((vm) => vm.metadata.name ?? '')
    .sort();
}

async function claimByHand(
  kube: KubeCluster,
  namespace: string,
  member: string,
  holder: string,
): Promise<void> {
  const now = new Date().toISOString();
  await kube.createLease(namespace, {
    metadata: { name: `corral-vdi-${member}` },
    spec: { holderIdentity: holder, acquireTime: now, renewTime: now, leaseDurationSeconds: 3600 },
  });
}

describe('pools against the real apiserver and the KubeVirt simulator', () => {
  it('creates a 3-member pool from a golden VM, lists it, and deletes it', async () => {
    const { ctx, kube, namespace, audit, progress } = await setUp('walkthrough');
    await kube.createVm(namespace, goldenVm('golden-desktop'));

    const created = await createPool(ctx, { name: 'devpool', from: 'golden-desktop', size: 3 });
    expect(created).toMatchObject({
      id: `vm/${namespace}/devpool`,
      members: ['devpool-1', 'devpool-2', 'devpool-3'],
    });

    for (const name of created.members) {
      const vm = (await kube.getVm(namespace, name)) as VirtualMachine;
      expect(vm.metadata.labels).toEqual({ app: 'desktop', 'corral.dev/vdi-pool': 'devpool' });
      expect(vm.metadata.annotations?.['corral.dev/vdi-source']).toBe('golden-desktop');
      expect(vm.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
      expect(vm.spec.template?.metadata?.labels).toEqual({ app: 'desktop' });
      expect(vm.spec.runStrategy).toBe('Halted');
      expect(vm.spec.running).toBeUndefined();
    }
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(progress.filter((event) => event.step === 'ready').map((event) => event.done)).toEqual([1, 2, 3]);

    await waitFor(
      async () =>
        (await getPool(ctx, { name: 'devpool' })).members.every((member) => member.power === 'Stopped'),
      { describe: 'the members to report Stopped' },
    );
    const [listed] = await listPools(ctx, { namespaces: [namespace] });
    expect(listed?.members.map((member) => [member.name, member.state.kind, member.power])).toEqual([
      ['devpool-1', 'free', 'Stopped'],
      ['devpool-2', 'free', 'Stopped'],
      ['devpool-3', 'free', 'Stopped'],
    ]);

    const deleted = await deletePool(ctx, { name: 'devpool' });
    expect(deleted).toMatchObject({ members: ['devpool-1', 'devpool-2', 'devpool-3'], forced: false });
    expect(await poolVms(kube, namespace, 'devpool')).toEqual([]);
    expect(await kube.getVm(namespace, 'golden-desktop')).toBeDefined();
    expect(await listPools(ctx, { namespaces: [namespace] })).toEqual([]);
    expect(audit.list().map((entry) => [entry.action, entry.status])).toEqual([
      ['vdi pool create', 'ok'],
      ['vdi pool delete', 'ok'],
    ]);
  });

  it('lists members of ten and more in natural order', async () => {
    const { ctx, kube, namespace } = await setUp('natural');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'big', from: 'golden', size: 11, concurrency: 6 });
    const pool = await getPool(ctx, { name: 'big' });
    expect(pool.members.map((member) => member.name).slice(8)).toEqual(['big-9', 'big-10', 'big-11']);
    // KubeVirt snapshots a golden VM for one clone at a time, behind every other test's VMs on the shared plane
  }, 180_000);

  it("lists the pools from this process's synced watch caches without a request", async () => {
    const namespace = await createTestNamespace(cluster(), 'cached-list');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    vdi.startCaches([namespace]);
    try {
      await vdi.waitForCacheSync();
      await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
      const kube = vdi.context.cluster;
      kube.requestCounts.clear();
      const [pool] = await listPools(vdi.context, { namespaces: [namespace] });
      expect(pool?.counts).toMatchObject({ members: 2, claimed: 1 });
      // the VMs, the Leases and the pool settings' ConfigMaps all come from the caches
      expect(Object.fromEntries(kube.requestCounts)).toEqual({});
    } finally {
      vdi.stopCaches();
    }
  });

  it('does not find a golden VM that lives in another namespace, and says to pass that namespace', async () => {
    const { ctx, kube, namespace } = await setUp('golden-elsewhere');
    const elsewhere = await createTestNamespace(cluster(), 'golden-home');
    await kube.createVm(elsewhere, goldenVm('golden-desktop'));

    const error = await failureOf(createPool(ctx, { name: 'devpool', from: 'golden-desktop', size: 2 }));
    expect(error.code).toBe('GOLDEN_NOT_FOUND');
    // the original troubleshooting guide's phrase comes first, so a search of that guide finds it
    expect(error.message).toMatch(
      new RegExp(`^golden VM "golden-desktop" not found in namespace "${namespace}"`),
    );
    expect(error.message).toMatch(/pass the namespace where the golden VM lives/);
    expect(await kube.listVms(namespace)).toEqual([]);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);

    const fromHome = await createPool(ctx, {
      name: 'devpool',
      from: 'golden-desktop',
      size: 1,
      namespace: elsewhere,
    });
    expect(fromHome.namespace).toBe(elsewhere);
  });

  it('refuses a taken member name, an existing pool, a bad name and a bad size before any change', async () => {
    const { ctx, kube, namespace } = await setUp('refusals');
    await kube.createVm(namespace, goldenVm('golden'));
    await kube.createVm(namespace, {
      metadata: { name: 'devpool-2' },
      spec: {
        runStrategy: 'Halted',
        template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
      },
    });

    const taken = await failureOf(createPool(ctx, { name: 'devpool', from: 'golden', size: 3 }));
    expect(taken.code).toBe('ALREADY_EXISTS');
    expect(taken.details.taken).toEqual(['devpool-2']);

    await createPool(ctx, { name: 'other', from: 'golden', size: 1 });
    const again = await failureOf(createPool(ctx, { name: 'other', from: 'golden', size: 1 }));
    expect(again.code).toBe('ALREADY_EXISTS');
    expect(again.message).toMatch(/already exists/);

    for (const options of [
      { name: 'Dev Pool', from: 'golden', size: 1 },
      { name: 'devpool', from: 'golden', size: 0 },
      { name: 'devpool', from: 'golden', size: 2.5 },
      { name: 'devpool', from: 'golden', size: 1, concurrency: 0 },
    ]) {
      expect((await failureOf(createPool(ctx, options))).code).toBe('INVALID_INPUT');
    }
    expect(await poolVms(kube, namespace, 'devpool')).toEqual([]);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('reports a failed clone member by member, fails fast, and removes the members it made', async () => {
    const { ctx, kube, namespace, progress } = await setUp('clone-fails', {
      'devpool-2': { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' },
    });
    await kube.createVm(namespace, goldenVm('golden'));

    const error = await failureOf(
      createPool(ctx, { name: 'devpool', from: 'golden', size: 4, concurrency: 1 }),
    );
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.message).toMatch(
      // KubeVirt's reason when the SDK reads the write that failed the clone; where to read it once KubeVirt reset it
      /devpool-2: failed \(VirtualMachineClone .*devpool-2-clone failed: (Failed: snapshot refused by the storage class|snapshot \S+ does not exist anymore|KubeVirt gave no reason in its status; its events say why: "kubectl describe virtualmachineclone -n \S+ devpool-2-clone")/,
    );
    expect(error.details.members).toMatchObject([
      { member: 'devpool-1', status: 'ready', removed: true },
      { member: 'devpool-2', status: 'failed', removed: true },
      { member: 'devpool-3', status: 'not-started' },
      { member: 'devpool-4', status: 'not-started' },
    ]);
    expect(await poolVms(kube, namespace, 'devpool')).toEqual([]);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(progress.map((event) => `${event.member} ${event.step}`)).toContain('devpool-1 removed');
  });

  it('keeps what was made after a failure when asked to', async () => {
    const { ctx, kube, namespace } = await setUp('keep-partial', {
      'devpool-2': { [simulatorAnnotations.fail]: 'no snapshot class' },
    });
    await kube.createVm(namespace, goldenVm('golden'));

    const error = await failureOf(
      createPool(ctx, { name: 'devpool', from: 'golden', size: 2, concurrency: 1, keepPartial: true }),
    );
    expect(error.code).toBe('CLONE_FAILED');
    expect(error.details.kept).toBe(true);
    expect(await poolVms(kube, namespace, 'devpool')).toEqual(['devpool-1']);
    expect((await kube.resource(cloneKind).in(namespace).list()).map((clone) => clone.metadata.name)).toEqual(
      ['devpool-2-clone'],
    );
  });

  it('times out on a clone that never finishes, naming the clone object and the usual causes, and cleans up', async () => {
    const { ctx, kube, namespace } = await setUp('clone-timeout', {
      'devpool-1': { [simulatorAnnotations.neverFinish]: 'true' },
    });
    await kube.createVm(namespace, goldenVm('golden'));
    // the deadline comes from the injected clock: each reading moves it 30 s on
    const clock = createTestClock();
    ctx.clock = {
      now: () => {
        clock.advance(30_000);
        return clock.now();
      },
    };

    const error = await failureOf(createPool(ctx, { name: 'devpool', from: 'golden', size: 1 }));
    expect(error.code).toBe('CLONE_TIMEOUT');
    expect(error.message).toMatch(
      new RegExp(`^timed out after \\S+ waiting for the clone to produce VM ${namespace}/devpool-1\\b`),
    );
    expect(error.message).toMatch(new RegExp(`VirtualMachineClone ${namespace}/devpool-1-clone`));
    expect(error.message).toMatch(/StorageClass or VolumeSnapshotClass/);
    expect(error.message).toMatch(/PVCs cannot be snapshotted/);
    expect(await poolVms(kube, namespace, 'devpool')).toEqual([]);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('leaves a member it made to the claim that took it before the grow gave up, and says so', async () => {
    const { ctx, kube, namespace } = await setUp('grow-claimed');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'devpool', from: 'golden', size: 1 });
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: ctx.clock });
    await vdi.claim({ pool: 'devpool', identity: 'bob' });
    // the grow does not see its clone finish in time, though the clone makes a stopped member free to claim
    kube.seenUnfinished.add('devpool-2-clone');
    const growing = failureOf(resizePool(ctx, { name: 'devpool', size: 2 }));
    await waitFor(() => kube.getVm(namespace, 'devpool-2'), {
      describe: 'devpool-2 made and stopped',
      until: (vm) => vm?.status?.printableStatus === 'Stopped' && !vm.status.restoreInProgress,
    });
    const carol = await vdi.claim({ pool: 'devpool', identity: 'carol' });
    expect(carol.member).toBe('devpool-2');
    (ctx.clock as ReturnType<typeof createTestClock>).advance(defaultCloneTimeoutMs + 60_000);

    const error = await growing;
    expect(error.code).toBe('CLONE_TIMEOUT');
    expect(error.message).toContain('devpool-2 (held by carol)');
    expect(await poolVms(kube, namespace, 'devpool')).toEqual(['devpool-1', 'devpool-2']);
    expect((await kube.getLease(namespace, 'corral-vdi-devpool-2'))?.spec.holderIdentity).toBe('carol');
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('waits for the clone to succeed, not for its target VM to appear', async () => {
    // KubeVirt's restore makes the target VM before the clone is done; the pool reads the clone as restoring
    // until the test lets it see the phase KubeVirt wrote
    const { ctx, kube, namespace, progress } = await setUp('clone-slow');
    kube.seenUnfinished.add('devpool-1-clone');
    await kube.createVm(namespace, goldenVm('golden'));
    let settled = false;
    const created = createPool(ctx, { name: 'devpool', from: 'golden', size: 1 }).finally(() => {
      settled = true;
    });
    await waitFor(() => kube.getVm(namespace, 'devpool-1'), { describe: 'the target VM devpool-1' });
    kube.clonePhasesRead.length = 0;
    // a second read in RestoreInProgress means the first one, target made, was judged not ready
    await waitFor(() => kube.clonePhasesRead.filter((phase) => phase === 'RestoreInProgress').length >= 2, {
      describe: 'two reads of the clone in RestoreInProgress by the pool',
    });
    expect(settled).toBe(false);
    expect(progress.map((event) => event.step)).not.toContain('ready');

    kube.seenUnfinished.delete('devpool-1-clone');
    expect((await created).members).toEqual(['devpool-1']);
    expect(progress.map((event) => event.step)).toContain('ready');
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('refuses a device the KubeVirt CR does not permit, saying how to permit it', async () => {
    const { ctx, kube, namespace } = await setUp('not-permitted');
    await setPermittedHostDevices(cluster().kubeConfig, {});
    await kube.createVm(namespace, goldenVm('golden', [`example.com/${namespace}-unknown`]));
    const plan = await planCapacity(ctx, { from: 'golden', size: 1 });
    expect(plan).toMatchObject({ kind: 'reject', reason: 'not-permitted' });
    expect(plan.kind === 'reject' && plan.message).toMatch(/permittedHostDevices/);
  });

  it('grows into the next indices and shrinks by free members only, never a claimed one', async () => {
    const { ctx, kube, namespace, audit } = await setUp('resize');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'devpool', from: 'golden', size: 2 });

    const grown = await resizePool(ctx, { name: 'devpool', size: 5 });
    expect(grown).toMatchObject({ from: 2, size: 5, added: ['devpool-3', 'devpool-4', 'devpool-5'] });
    expect((await kube.getVm(namespace, 'devpool-5'))?.metadata.labels?.['corral.dev/vdi-pool']).toBe(
      'devpool',
    );

    await claimByHand(kube, namespace, 'devpool-5', 'alice');
    await claimByHand(kube, namespace, 'devpool-3', 'bob');
    const shrunk = await resizePool(ctx, { name: 'devpool', size: 3 });
    expect(shrunk).toMatchObject({ from: 5, size: 3, removed: ['devpool-4', 'devpool-2'] });
    expect(await poolVms(kube, namespace, 'devpool')).toEqual(['devpool-1', 'devpool-3', 'devpool-5']);

    const tooFar = await failureOf(resizePool(ctx, { name: 'devpool', size: 1 }));
    expect(tooFar.code).toBe('POOL_IN_USE');
    expect(tooFar.message).toMatch(/can shrink to 2 at the least/);
    expect(await poolVms(kube, namespace, 'devpool')).toEqual(['devpool-1', 'devpool-3', 'devpool-5']);
    expect(audit.list().map((entry) => `${entry.action} ${entry.status}`)).toEqual([
      'vdi pool create ok',
      'vdi pool resize ok',
      'vdi pool resize ok',
      'vdi pool resize error',
    ]);
  });

  it('refuses to delete a pool with claimed members unless forced, and audits the force', async () => {
    const { ctx, kube, namespace, audit } = await setUp('delete-claimed');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'devpool', from: 'golden', size: 2 });
    await claimByHand(kube, namespace, 'devpool-2', 'alice@example.com');
    expect((await getPool(ctx, { name: 'devpool' })).members[1]?.state).toMatchObject({
      kind: 'claimed',
      holder: 'alice@example.com',
    });

    const refused = await failureOf(deletePool(ctx, { name: 'devpool' }));
    expect(refused.code).toBe('POOL_IN_USE');
    expect(refused.message).toMatch(/devpool-2 \(alice@example.com\)/);
    expect(await poolVms(kube, namespace, 'devpool')).toEqual(['devpool-1', 'devpool-2']);

    const forced = await deletePool(ctx, { name: 'devpool', force: true, identity: 'admin@example.com' });
    expect(forced).toMatchObject({ forced: true, leases: 1 });
    expect(await poolVms(kube, namespace, 'devpool')).toEqual([]);
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-2')).toBeUndefined();
    expect(
      audit
        .list()
        .slice(-2)
        .map((entry) => `${entry.action} ${entry.status} ${entry.user}`),
    ).toEqual(['vdi pool delete error corral-vdi', 'vdi pool force-delete ok admin@example.com']);
    expect((await failureOf(getPool(ctx, { name: 'devpool' }))).code).toBe('POOL_NOT_FOUND');
  });

  it("recreates an ephemeral member whose grow's clone is still finishing, instead of taking that clone for a recreate under way", async () => {
    const { ctx, kube, namespace } = await setUp('recreate-growing');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'eph', from: 'golden', size: 1, ephemeral: true });
    // KubeVirt has made eph-2, but the grow reads its clone as not done yet: a claim may already have taken it
    kube.seenUnfinished.add('eph-2-clone');
    const growing = resizePool(ctx, { name: 'eph', size: 2 });
    const made = await waitFor(() => kube.getVm(namespace, 'eph-2'), {
      describe: 'eph-2 made and stopped',
      until: (vm) => vm?.status?.printableStatus === 'Stopped' && !vm.status.restoreInProgress,
    });
    kube.clonePhasesRead.length = 0;
    const recreating = recreateMember(ctx, { namespace, vm: 'eph-2' });
    // the grow reads the clone every 100 ms or so: ten reads on, the recreate's first one has answered too
    await waitFor(() => kube.clonePhasesRead.length >= 10, { describe: 'the recreate to read the clone' });
    kube.seenUnfinished.delete('eph-2-clone');
    await Promise.all([growing, recreating]);
    expect((await kube.getVm(namespace, 'eph-2'))?.metadata.uid).not.toBe(made?.metadata.uid);
  });

  it('recreates an ephemeral member from its golden VM under the same name, and again after a failure part-way', async () => {
    const { ctx, kube, namespace } = await setUp('ephemeral');
    await kube.createVm(namespace, goldenVm('golden'));
    await createPool(ctx, { name: 'eph', from: 'golden', size: 2, ephemeral: true });
    const before = (await kube.getVm(namespace, 'eph-1')) as VirtualMachine;
    expect(before.metadata.labels).toMatchObject({
      'corral.dev/vdi-pool': 'eph',
      'corral.dev/vdi-ephemeral': 'true',
    });
    await kube.patchVm(namespace, 'eph-1', { metadata: { annotations: { 'user-state': 'dirty' } } });

    await recreateMember(ctx, { namespace, vm: (await kube.getVm(namespace, 'eph-1')) as VirtualMachine });
    const after = (await kube.getVm(namespace, 'eph-1')) as VirtualMachine;
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    expect(after.metadata.annotations?.['user-state']).toBeUndefined();
    expect(after.metadata.labels).toMatchObject({
      'corral.dev/vdi-pool': 'eph',
      'corral.dev/vdi-ephemeral': 'true',
    });
    expect(after.metadata.annotations?.['corral.dev/vdi-source']).toBe('golden');
    expect(after.spec.runStrategy).toBe('Halted');
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);

    // a failed attempt that got as far as deleting the VM: its claim names the pool, a sibling the golden VM
    await kube.createLease(namespace, {
      metadata: {
        name: 'corral-vdi-eph-2',
        labels: { 'corral.dev/vdi-pool': 'eph', 'corral.dev/vdi-member': 'eph-2' },
      },
      spec: { holderIdentity: 'alice', renewTime: new Date().toISOString(), leaseDurationSeconds: 3600 },
    });
    await kube.deleteVm(namespace, 'eph-2');
    await waitFor(async () => (await kube.getVm(namespace, 'eph-2')) === undefined, {
      describe: 'eph-2 to go',
    });
    await recreateMember(ctx, { namespace, vm: 'eph-2' });
    expect((await kube.getVm(namespace, 'eph-2'))?.metadata.labels).toMatchObject({
      'corral.dev/vdi-ephemeral': 'true',
    });

    const persistent = await setUp('persistent');
    await persistent.kube.createVm(persistent.namespace, goldenVm('golden'));
    await createPool(persistent.ctx, { name: 'keep', from: 'golden', size: 1 });
    const refused = await failureOf(
      recreateMember(persistent.ctx, { namespace: persistent.namespace, vm: 'keep-1' }),
    );
    expect(refused.code).toBe('INVALID_INPUT');
  });
});
