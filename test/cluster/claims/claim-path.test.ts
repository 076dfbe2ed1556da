import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { claimDesktop } from '../../../src/claims/claim-desktop.js';
import { markClaimReleasing, writeClaimLease } from '../../../src/claims/lease-writes.js';
import { startDesktop } from '../../../src/claims/start-desktop.js';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster, type ListOptions } from '../../../src/kube/cluster.js';
import { vmiKind } from '../../../src/kube/resource-kinds.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { setSimulatorPaused } from '../../../src/testing/kubevirt/index.js';
import { createNamespaceClock } from '../../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The pool's lists as an earlier read returned them, which cached lists answer with: a watch cache lagging. */
interface Snapshot {
  vms: VirtualMachine[];
  vmis: VirtualMachineInstance[];
  leases: LeaseObject[];
}

/** The adapter, whose cached lists answer from a snapshot taken earlier while one is set. */
class LaggingCluster extends KubeCluster {
  snapshot: Snapshot | undefined;

  async takeSnapshot(namespace: string): Promise<void> {
    this.snapshot = {
      vms: await super.listVms(namespace, 'corral.dev/vdi-pool=devpool'),
      vmis: await super.listVmis(namespace),
      leases: await super.listLeases(namespace, 'corral.dev/vdi-pool=devpool'),
    };
  }

  override async listVms(namespace: string | undefined, selector?: string, options: ListOptions = {}) {
    return options.cached && this.snapshot
      ? this.snapshot.vms
      : await super.listVms(namespace, selector, options);
  }

  override async listVmis(namespace?: string, options: ListOptions = {}) {
    return options.cached && this.snapshot ? this.snapshot.vmis : await super.listVmis(namespace, options);
  }

  override async listLeases(namespace: string, selector?: string, options: ListOptions = {}) {
    return options.cached && this.snapshot
      ? this.snapshot.leases
      : await super.listLeases(namespace, selector, options);
  }
}

/** The adapter, counting the fresh reads of VMs a claim or a start makes: lists of a pool and reads of one. */
class ReadCountingCluster extends KubeCluster {
  reads = 0;

  override async listVms(namespace: string | undefined, selector?: string, options: ListOptions = {}) {
    if (!options.cached) this.reads += 1;
    return await super.listVms(namespace, selector, options);
  }

  override async getVm(...args: Parameters<KubeCluster['getVm']>) {
    this.reads += 1;
    return await super.getVm(...args);
  }
}

/** The adapter, which runs a one-shot action just before its next Lease replace. */
class MarkingCluster extends KubeCluster {
  beforeNextReplace: (() => Promise<void>) | undefined;

  override async replaceLease(...args: Parameters<KubeCluster['replaceLease']>) {
    const before = this.beforeNextReplace;
    this.beforeNextReplace = undefined;
    await before?.();
    return await super.replaceLease(...args);
  }
}

async function setUp(prefix: string, size: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const kube = new LaggingCluster(cluster().kubeConfig);
  const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
  ctx.backends.vm = createVmBackend(ctx);
  const conflicts: string[] = [];
  ctx.events.on('claim-conflict', ({ desktopId, identity }) => conflicts.push(`${identity} ${desktopId}`));
  const claim = (identity: string) =>
    claimDesktop(ctx, { pool: 'devpool', identity }, { actor: undefined, order: 'lowest' });
  const holders = async () =>
    (await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool'))
      .map((lease) => [lease.metadata.labels?.['corral.dev/vdi-member'], lease.spec.holderIdentity])
      .sort();
  return { namespace, vdi, kube, ctx, claim, holders, conflicts };
}

// Every test has its own namespace and clocks, so they run side by side and the claims' waits for a guest going down
// (real time, about 10 s each) overlap.
describe.concurrent('a claim planned on a view older than the cluster', () => {
  it('passes over a member taken since, takes the next free one of the same view, and leaves the winner alone', async () => {
    const { namespace, vdi, kube, claim, holders, conflicts } = await setUp('stale', 2);
    await kube.takeSnapshot(namespace);
    // another process claims: nothing in this one knows of it
    const bob = await vdi.assign({ pool: 'devpool', identity: 'bob' });
    expect(bob.member).toBe('devpool-1');
    const bobsLease = await kube.getLease(namespace, 'corral-vdi-devpool-1');

    // the view still shows devpool-1 free; the look at it before the Lease write shows bob's copy, written since,
    // so the claim writes nothing for it and goes on without reading the pool again
    const lists = kube.requestCounts.get('list') ?? 0;
    const alice = await claim('alice');
    expect(alice.member).toBe('devpool-2');
    expect(conflicts).toEqual([]);
    // Its one fresh list is its own claims, read once it holds the claimant Lease (a claim of the identity that
    // finished before shows only there); the member passed over was left under the same turn. The pool came from
    // the stale view once.
    expect((kube.requestCounts.get('list') ?? 0) - lists).toBe(1);
    expect(await holders()).toEqual([
      ['devpool-1', 'bob'],
      ['devpool-2', 'alice'],
    ]);
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toEqual(bobsLease);
  });

  it('passes over a member a claim of the same process took a moment ago, though the view does not show it yet', async () => {
    const { namespace, kube, claim, holders, conflicts } = await setUp('stale-here', 2);
    await kube.takeSnapshot(namespace);
    expect((await claim('bob')).member).toBe('devpool-1');
    expect((await claim('alice')).member).toBe('devpool-2');
    expect(conflicts).toEqual([]);
    expect(await holders()).toEqual([
      ['devpool-1', 'bob'],
      ['devpool-2', 'alice'],
    ]);
  });

  it('refuses with NO_FREE_MEMBER only after a fresh read, when the one member it saw free was taken', async () => {
    const { namespace, vdi, kube, claim, holders, conflicts } = await setUp('stale-full', 1);
    await kube.takeSnapshot(namespace);
    await vdi.assign({ pool: 'devpool', identity: 'bob' });
    const error = await claim('alice').catch((caught: unknown) => caught);
    expect(isVdiError(error, 'NO_FREE_MEMBER')).toBe(true);
    // the look before the Lease write shows bob's copy: nothing is written for it
    expect(conflicts).toEqual([]);
    expect(await holders()).toEqual([['devpool-1', 'bob']]);
    // nothing of alice's is left: no member Lease, no claimant Lease
    expect((await kube.listLeases(namespace)).map((lease) => lease.metadata.name)).toEqual([
      'corral-vdi-devpool-1',
    ]);
  });

  it('gives an identity the desktop it claimed a moment ago, though the view does not show it yet', async () => {
    const { namespace, vdi, kube, claim, holders } = await setUp('stale-own', 3);
    await kube.takeSnapshot(namespace);
    // the first claim went through another process (another broker replica, say)
    const first = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    const again = await claim('alice');
    expect(again).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    expect(await holders()).toEqual([[first.member, 'alice']]);
  });
});

// A claim waits for a guest going down with 50 reads 200 ms apart: side by side on a busy machine that takes a minute.
const goingDownWait = { timeout: 120_000 };
// Where the member cannot finish going down before the test acts, a claim's wait for it always runs out: half a
// second shows that as well as the default ten.
const waitThatRunsOut = { goingDownWaitMs: 500 };

describe.concurrent('a member whose previous instance is still going down', goingDownWait, () => {
  it('is not handed out: the next claim takes another member, or is told to try again in a moment', async () => {
    const namespace = await createTestNamespace(cluster(), 'slowstop');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, ...waitThatRunsOut });
    const kube = vdi.context.cluster;
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
    const bob = await vdi.assign({ pool: 'devpool', identity: 'bob' });
    expect(bob.member).toBe('devpool-1');
    await waitFor(async () => (await kube.getVmi(namespace, 'devpool-1'))?.status?.phase, {
      describe: "bob's instance to run",
      until: (phase) => phase === 'Running',
    });
    await vdi.release({ member: 'devpool-1', identity: 'bob' });
    await waitFor(async () => (await kube.getVm(namespace, 'devpool-1'))?.status?.printableStatus, {
      describe: 'devpool-1 to show Stopping, its instance still there',
      until: (status) => status === 'Stopping',
    });

    // an administrator's assign takes the lowest free member: not the one still going down
    const carol = await vdi.assign({ pool: 'devpool', identity: 'carol' });
    expect(carol.member).toBe('devpool-2');
    const error = await vdi.assign({ pool: 'devpool', identity: 'dave' }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'NO_FREE_MEMBER')).toBe(true);
    expect(error).toMatchObject({ retryable: true, details: { goingDown: 1 } });
    expect((error as Error).message).toMatch(/^pool has no free members yet: /);
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();

    await clock.advance(60_000);
    await waitFor(async () => await kube.getVmi(namespace, 'devpool-1'), {
      describe: "bob's instance to be gone",
      until: (vmi) => vmi === undefined,
    });
    const dave = await vdi.assign({ pool: 'devpool', identity: 'dave' });
    expect(dave.member).toBe('devpool-1');
  });

  /**
   * bob's claim of devpool-1 is released while its guest takes a minute of namespace time to stop, and a claim of
   * carol's has just won the member's Lease without handing it out yet.
   */
  async function wonWhileGoingDown(prefix: string) {
    const namespace = await createTestNamespace(cluster(), prefix);
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const kube = new ReadCountingCluster(cluster().kubeConfig);
    const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
    ctx.backends.vm = createVmBackend(ctx);
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
    await vdi.assign({ pool: 'devpool', identity: 'bob' });
    const bobs = await waitFor(() => kube.getVmi(namespace, 'devpool-1'), {
      describe: "bob's instance to run",
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
    await vdi.release({ member: 'devpool-1', identity: 'bob' });
    await waitFor(async () => (await kube.getVm(namespace, 'devpool-1'))?.status?.printableStatus, {
      describe: 'devpool-1 to show Stopping',
      until: (status) => status === 'Stopping',
    });
    const target = {
      kind: 'vm' as const,
      namespace,
      pool: 'devpool',
      member: 'devpool-1',
      identity: 'carol',
      holderGroups: 'unchecked',
    };
    expect(await writeClaimLease(ctx, target, undefined)).toBeDefined();
    /**
     * Runs `call` and, once it answered or read the member twice more (it waits for bob's guest), lets the guest's
     * stop come due; resolves with whether it waited, its answer, and the member's instance when it answered.
     */
    const whileGoingDown = async <T>(call: () => Promise<T>) => {
      const readsBefore = kube.reads;
      const answering = call().then(async (answer) => ({
        answer,
        instance: await kube.getVmi(namespace, 'devpool-1'),
      }));
      const waited = await Promise.race([
        answering.then(() => false),
        waitFor(() => kube.reads, {
          describe: 'two more reads of the member',
          until: (reads) => reads >= readsBefore + 2,
        }).then(() => true),
      ]);
      await clock.advance(60_000);
      return { waited, ...(await answering) };
    };
    return { ctx, vdi, namespace, bobsInstance: bobs?.metadata?.uid, whileGoingDown };
  }

  it("is not started by a claim that finds its identity's Lease from a take not finished yet, until the instance is gone", async () => {
    const { ctx, bobsInstance, whileGoingDown } = await wonWhileGoingDown('slowstop-own');
    const { waited, answer, instance } = await whileGoingDown(() =>
      claimDesktop(ctx, { pool: 'devpool', identity: 'carol' }, { actor: undefined, order: 'lowest' }),
    );
    expect(waited).toBe(true);
    expect(answer.member).toBe('devpool-1');
    expect(instance?.metadata?.uid).not.toBe(bobsInstance);
  });

  it('is not started by a start of the holder of a claim not handed out yet, until the instance is gone', async () => {
    const { ctx, namespace, bobsInstance, whileGoingDown } = await wonWhileGoingDown('slowstop-start');
    const { waited, instance } = await whileGoingDown(() =>
      startDesktop(ctx, { member: 'devpool-1', identity: 'carol', namespace }),
    );
    expect(waited).toBe(true);
    expect(instance?.metadata?.uid).not.toBe(bobsInstance);
  });

  it('is not handed out by a claim planned from a view older than the release, which takes another member', async () => {
    const namespace = await createTestNamespace(cluster(), 'slowstop-stale');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const kube = new LaggingCluster(cluster().kubeConfig);
    await waitFor(
      async () => (await kube.listVms(namespace)).every((vm) => vm.status?.printableStatus === 'Stopped'),
      { describe: 'the members to report Stopped' },
    );
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
    // the view this process plans from shows both members stopped and free
    await kube.takeSnapshot(namespace);
    // another process: bob claims devpool-1 and lets it go; his guest takes a minute to shut down
    expect((await vdi.assign({ pool: 'devpool', identity: 'bob' })).member).toBe('devpool-1');
    await waitFor(async () => (await kube.getVmi(namespace, 'devpool-1'))?.status?.phase, {
      describe: "bob's instance to run",
      until: (phase) => phase === 'Running',
    });
    await vdi.release({ member: 'devpool-1', identity: 'bob' });
    const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
    ctx.backends.vm = createVmBackend(ctx);

    const alice = await claimDesktop(
      ctx,
      { pool: 'devpool', identity: 'alice' },
      { actor: undefined, order: 'lowest' },
    );
    expect(alice.member).toBe('devpool-2');
    // the Lease it won on devpool-1 is given back, and nothing of alice's is left there
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();
    const left = await kube.getVm(namespace, 'devpool-1');
    expect(left?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    // still going down: asked to stop, bob's instance still there (KubeVirt's status may not say so yet)
    expect(left?.spec.runStrategy).not.toBe('Always');
    expect(await kube.getVmi(namespace, 'devpool-1')).toBeDefined();
    await clock.advance(60_000);
  });

  // A defect the fault storm found (etcd paused), step by step: a claim took a member whose stop KubeVirt had not
  // shown yet for running, and left it to stop.
  it('hands a member claimed right after a release, before KubeVirt shows the stop, out only once it stopped, and starts it', async () => {
    const namespace = await createTestNamespace(cluster(), 'stale-running');
    await createPoolMembers(cluster(), namespace, 'alpha', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, ...waitThatRunsOut });
    const kube = vdi.context.cluster;
    await vdi.claim({ pool: 'alpha', identity: 'ada@example.com' });
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: 'alpha-1 to show Running',
      until: (vm) => vm?.status?.printableStatus === 'Running',
    });
    // KubeVirt's controllers lag behind: the stop is accepted, the status still says Running
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    await vdi.release({ member: 'alpha-1', identity: 'ada@example.com' });
    // ada's guest still runs on it: refused as going down, retryable
    await expect(vdi.claim({ pool: 'alpha', identity: 'bob@example.com' })).rejects.toMatchObject({
      code: 'NO_FREE_MEMBER',
      retryable: true,
      details: { goingDown: 1 },
    });
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: 'alpha-1 to stop',
      until: (vm) => vm?.status?.printableStatus === 'Stopped',
    });
    const claimed = await vdi.claim({ pool: 'alpha', identity: 'bob@example.com' });

    expect(claimed.startError).toBeUndefined();
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: "bob's alpha-1 to run",
      timeoutMs: 10_000,
      until: (vm) => vm?.spec.runStrategy === 'Always' && vm.status?.printableStatus === 'Running',
    });
  });
});

describe('a stopped member whose instance KubeVirt made late', goingDownWait, () => {
  /** Pool `alpha` of one member, `alpha-1`, stopped, with an instance no start asked for, the guest left alone. */
  async function memberWithLateInstance(prefix: string) {
    const namespace = await createTestNamespace(cluster(), prefix);
    await createPoolMembers(cluster(), namespace, 'alpha', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, ...waitThatRunsOut });
    const kube = vdi.context.cluster;
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    await kube
      .resource(vmiKind)
      .in(namespace)
      .create({
        metadata: { name: 'alpha-1', namespace },
        spec: { domain: { memory: { guest: '128Mi' }, devices: {} } },
      });
    return { namespace, vdi, kube };
  }

  // Found by the chaos storm (seed 42, vmi-at-handout): a holder's start and its release's stop came a moment apart,
  // and KubeVirt's controller, behind, made the instance for the start after the stop, while the VM still showed
  // Stopped. The look before the Lease write read the VM alone, took the member as free and stopped, and handed it
  // out with the last holder's instance there.
  it('passes it over as going down, though its VM shows no instance yet', async () => {
    const { namespace, vdi, kube } = await memberWithLateInstance('late-instance');

    await expect(vdi.claim({ pool: 'alpha', identity: 'bob@example.com' })).rejects.toMatchObject({
      code: 'NO_FREE_MEMBER',
      retryable: true,
      details: { goingDown: 1 },
    });
    const vm = await kube.getVm(namespace, 'alpha-1');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(vm?.spec.runStrategy).toBe('Halted');
    expect(await kube.getLease(namespace, 'corral-vdi-alpha-1')).toBeUndefined();
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
  });

  // The same storm: a claim of the identity whose other claim's take was under way on such a member found its Lease
  // through a page of free-looking members, which reads a VM that shows Stopped alone, renewed it and started it.
  it('is not renewed and started by a claim of the identity whose take on it is not handed out yet', async () => {
    const { namespace, vdi, kube } = await memberWithLateInstance('late-instance-own');
    const target = {
      kind: 'vm' as const,
      namespace,
      pool: 'alpha',
      member: 'alpha-1',
      identity: 'bob@example.com',
      holderGroups: 'unchecked',
    };
    expect(await writeClaimLease(vdi.context, target, undefined)).toBeDefined();

    await expect(vdi.claim({ pool: 'alpha', identity: 'bob@example.com' })).rejects.toMatchObject({
      code: 'NO_FREE_MEMBER',
      retryable: true,
    });
    const vm = await kube.getVm(namespace, 'alpha-1');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(vm?.spec.runStrategy).toBe('Halted');
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
  });
});

describe.concurrent('a claim taking over an expired claim', goingDownWait, () => {
  async function expiredClaim(prefix: string, options: { goingDownWaitMs?: number } = {}) {
    const namespace = await createTestNamespace(cluster(), prefix);
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock();
    const audit = new MemoryAuditSink();
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit, ...options });
    const kube = vdi.context.cluster;
    await vdi.claim({ pool: 'devpool', identity: 'bob' });
    const bobsInstance = await waitFor(async () => await kube.getVmi(namespace, 'devpool-1'), {
      describe: "bob's instance to run",
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
    // the Lease's hour passes without a broker to renew it
    clock.advance(2 * 3600_000);
    return { namespace, vdi, kube, audit, bobsUid: bobsInstance?.metadata.uid };
  }

  async function newInstanceUid(kube: KubeCluster, namespace: string, old: string | undefined) {
    const vmi = await waitFor(async () => await kube.getVmi(namespace, 'devpool-1'), {
      describe: 'a new instance of devpool-1 to run',
      until: (found) => found?.status?.phase === 'Running' && found.metadata.uid !== old,
    });
    return vmi?.metadata.uid;
  }

  it('resets the member first, audited as vdi reclaim (expired), then starts it for the new holder', async () => {
    const { namespace, vdi, kube, audit, bobsUid } = await expiredClaim('takeover');
    const alice = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(alice).toMatchObject({ member: 'devpool-1', owner: 'alice' });
    expect(alice.startError).toBeUndefined();
    expect(await newInstanceUid(kube, namespace, bobsUid)).not.toBe(bobsUid);
    expect(audit.list().map((entry) => [entry.action, entry.user, entry.status])).toEqual([
      ['vdi claim', 'bob', 'ok'],
      ['vdi reclaim (expired)', 'alice', 'ok'],
      ['vdi claim', 'alice', 'ok'],
    ]);
    const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
    expect(lease?.spec.holderIdentity).toBe('alice');
    expect(lease?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBeUndefined();
  });

  it('keeps the reset due and answers a retryable STOP_FAILED while the previous instance is still going down', async () => {
    const { namespace, vdi, kube, bobsUid } = await expiredClaim('takeover-slow', waitThatRunsOut);
    const guestClock = await createNamespaceClock(cluster().kubeConfig, namespace);
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
    const error = await vdi.claim({ pool: 'devpool', identity: 'alice' }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'STOP_FAILED')).toBe(true);
    expect(error).toMatchObject({ retryable: true });
    // not handed out: alice holds it, still marked, and bob's guest is still going down
    const marked = await kube.getLease(namespace, 'corral-vdi-devpool-1');
    expect(marked?.spec.holderIdentity).toBe('alice');
    const session = marked?.metadata.annotations?.['corral.dev/vdi-session-id'];
    expect(marked?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBe(session);
    expect((await kube.getVmi(namespace, 'devpool-1'))?.metadata.uid).toBe(bobsUid);

    await guestClock.advance(60_000);
    await waitFor(async () => await kube.getVmi(namespace, 'devpool-1'), {
      describe: "bob's instance to be gone",
      until: (vmi) => vmi === undefined,
    });
    const again = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(again).toMatchObject({ member: 'devpool-1', sessionId: session, retried: true });
    expect(again.startError).toBeUndefined();
    expect(await newInstanceUid(kube, namespace, bobsUid)).not.toBe(bobsUid);
    const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
    expect(lease?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBeUndefined();
  });

  it('does not start the member when a release of the same claim begins while the start finishes the reset', async () => {
    const { namespace, vdi, kube } = await expiredClaim('takeover-release', waitThatRunsOut);
    const guestClock = await createNamespaceClock(cluster().kubeConfig, namespace);
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '60000' } },
    });
    await expect(vdi.claim({ pool: 'devpool', identity: 'alice' })).rejects.toMatchObject({
      code: 'STOP_FAILED',
    });
    await guestClock.advance(60_000);
    await waitFor(async () => await kube.getVmi(namespace, 'devpool-1'), {
      describe: "bob's instance to be gone",
      until: (vmi) => vmi === undefined,
    });
    // alice's release marks the claim its own just as her start is about to clear the reset mark
    const hooked = new MarkingCluster(cluster().kubeConfig);
    const ctx: VdiContext = { ...vdi.context, cluster: hooked, backends: {} };
    ctx.backends.vm = createVmBackend(ctx);
    hooked.beforeNextReplace = async () => {
      const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
      if (lease) expect(await markClaimReleasing(vdi.context, lease, 'released')).toBeDefined();
    };

    const error = await startDesktop(ctx, { member: 'devpool-1', identity: 'alice' }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'CLAIM_CHANGED')).toBe(true);
    const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
    expect(lease?.metadata.annotations?.['corral.dev/vdi-releasing']).toBeDefined();
    expect((await kube.getVm(namespace, 'devpool-1'))?.spec.runStrategy).toBe('Halted');
  });

  for (const next of ['claim', 'start'] as const) {
    it(`leaves the reset due when it fails after the Lease write, and the holder's next ${next} finishes it`, async () => {
      const { namespace, vdi, kube, audit, bobsUid } = await expiredClaim(`takeover-${next}`);
      await kube.patchVm(namespace, 'devpool-1', {
        metadata: { annotations: { [simulatorAnnotations.failStop]: '500 the node is unreachable' } },
      });
      const error = await vdi
        .claim({ pool: 'devpool', identity: 'alice' })
        .catch((caught: unknown) => caught);
      expect(isVdiError(error, 'STOP_FAILED')).toBe(true);
      // the claim is alice's, marked: nobody else may take it, and bob's guest has not been touched
      const marked = await kube.getLease(namespace, 'corral-vdi-devpool-1');
      expect(marked?.spec.holderIdentity).toBe('alice');
      const session = marked?.metadata.annotations?.['corral.dev/vdi-session-id'];
      expect(marked?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBe(session);
      expect((await kube.getVmi(namespace, 'devpool-1'))?.metadata.uid).toBe(bobsUid);
      const other = await vdi
        .claim({ pool: 'devpool', identity: 'carol' })
        .catch((caught: unknown) => caught);
      expect(isVdiError(other, 'NO_FREE_MEMBER')).toBe(true);

      await kube.patchVm(namespace, 'devpool-1', {
        metadata: { annotations: { [simulatorAnnotations.failStop]: null } },
      });
      if (next === 'claim') {
        const again = await vdi.claim({ pool: 'devpool', identity: 'alice' });
        expect(again).toMatchObject({ member: 'devpool-1', sessionId: session, retried: true });
      } else {
        await vdi.start({ member: 'devpool-1', identity: 'alice' });
      }
      expect(await newInstanceUid(kube, namespace, bobsUid)).not.toBe(bobsUid);
      const lease = await kube.getLease(namespace, 'corral-vdi-devpool-1');
      expect(lease?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBeUndefined();
      expect(
        audit
          .list()
          .filter((entry) => entry.action === 'vdi reclaim (expired)')
          .map((e) => e.status),
      ).toEqual(['error', 'ok']);
    });
  }
});
