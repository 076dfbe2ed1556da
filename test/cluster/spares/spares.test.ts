import { describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError, VdiError } from '../../../src/errors.js';
import type { DeletePreconditions } from '../../../src/kube/cluster.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { readPoolStatus } from '../../../src/pool-status/read-pool-status.js';
import { createPool, resizePool, setPool } from '../../../src/pools/pool-service.js';
import {
  carryOutSpares,
  keepPoolSpares,
  keepSpares,
  planFromRead,
  readSpares,
} from '../../../src/spares/keep-spares.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import {
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The adapter a keeper runs through, where a test can make it die after it took a spare's Lease. */
class DyingCluster extends KubeCluster {
  dieAtStop = false;

  private dead(): boolean {
    return this.dieAtStop;
  }

  override async stopVm(namespace: string, name: string) {
    if (this.dead()) throw new VdiError('CLUSTER_UNAVAILABLE', 'the keeper died before stopping the spare');
    return await super.stopVm(namespace, name);
  }

  override async deleteLease(namespace: string, name: string, preconditions: DeletePreconditions) {
    if (this.dead())
      throw new VdiError('CLUSTER_UNAVAILABLE', 'the keeper died before giving the Lease back');
    return await super.deleteLease(namespace, name, preconditions);
  }
}

/** The adapter of a read that counts how often it lists VMs. */
class CountingCluster extends KubeCluster {
  vmLists = 0;

  override async listVms(...args: Parameters<KubeCluster['listVms']>) {
    this.vmLists += 1;
    return await super.listVms(...args);
  }
}

async function setUp(prefix: string, size: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const kube = vdi.context.cluster;
  const power = async () =>
    Object.fromEntries(
      (await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool')).map((vm) => [
        vm.metadata.name,
        vm.status?.printableStatus,
      ]),
    );
  const annotation = async (member: string, key: string) =>
    (await kube.getVm(namespace, member))?.metadata.annotations?.[key];
  return { namespace, clock, vdi, ctx: vdi.context, kube, power, annotation };
}

describe('the spare keeper', () => {
  it("reads a pool's VMs once for a keeper pass and once for the pool's status", async () => {
    const { namespace, vdi } = await setUp('spares-one-list', 3);
    const kube = new CountingCluster(cluster().kubeConfig);
    const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
    const read = await readSpares(ctx, namespace, 'devpool');
    expect([read.vms.length, read.members.map((member) => member.member).sort(), kube.vmLists]).toEqual([
      3,
      ['devpool-1', 'devpool-2', 'devpool-3'],
      1,
    ]);
    kube.vmLists = 0;
    const status = await readPoolStatus(ctx, { name: 'devpool', namespace });
    expect([status.members.length, kube.vmLists]).toEqual([3, 1]);
  });

  it('starts spares up to minReady, a claim gets one warm, and it stops its own surplus spares only', async () => {
    const { namespace, vdi, ctx, kube, power, annotation } = await setUp('spares-keep', 4);
    expect(await setPool(ctx, { name: 'devpool', minReady: 2 })).toMatchObject({ minReady: 2 });
    const first = await keepPoolSpares(ctx, { name: 'devpool' });
    expect(first).toMatchObject({ minReady: 2, ready: [], started: ['devpool-1', 'devpool-2'], short: 0 });
    expect(await annotation('devpool-1', 'corral.dev/vdi-spare')).toBeDefined();
    await waitFor(async () => (await power())['devpool-2'] === 'Running', { describe: 'the spares to run' });

    const claimed = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(claimed).toMatchObject({ warm: true, running: true });
    expect(['devpool-1', 'devpool-2']).toContain(claimed.member);
    const cold = await vdi.claim({ pool: 'devpool', identity: 'bob' });
    expect(cold.member).toBe(['devpool-1', 'devpool-2'].find((member) => member !== claimed.member));
    expect(cold.warm).toBe(true);

    // two spares were claimed: the keeper starts the two members left
    const second = await keepPoolSpares(ctx, { name: 'devpool' });
    expect(second).toMatchObject({ ready: [], started: ['devpool-3', 'devpool-4'] });
    await waitFor(async () => (await power())['devpool-4'] === 'Running', {
      describe: 'the new spares to run',
    });
    // a member somebody started by hand, after a release: free, running and unmarked
    await vdi.release({ member: cold.member, identity: 'bob' });
    await waitFor(async () => (await power())[cold.member] === 'Stopped', {
      describe: 'the released member to stop',
    });
    await kube.patchVm(namespace, cold.member, { spec: { runStrategy: 'Always' } });
    await waitFor(async () => (await power())[cold.member] === 'Running', { describe: 'the hand start' });

    await setPool(ctx, { name: 'devpool', minReady: 0 });
    const third = await keepPoolSpares(ctx, { name: 'devpool' });
    expect(third).toMatchObject({ started: [], stopped: ['devpool-4', 'devpool-3'] });
    expect(third.ready.sort()).toEqual([cold.member, 'devpool-3', 'devpool-4'].sort());
    await waitFor(async () => (await power())['devpool-3'] === 'Stopped', {
      describe: 'the surplus spares to stop',
    });
    expect(await power()).toMatchObject({
      [claimed.member]: 'Running',
      [cold.member]: 'Running',
      'devpool-4': 'Stopped',
    });
    // the claimed spare is a spare no more
    expect(await annotation(claimed.member, 'corral.dev/vdi-spare')).toBeUndefined();
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-3')).toBeUndefined();
    expect((await kube.getLease(namespace, `corral-vdi-${claimed.member}`))?.spec.holderIdentity).toBe(
      'alice',
    );
  });

  it('refuses a minReady above the size, negative or not whole, and writes nothing', async () => {
    const { namespace, ctx, kube, annotation } = await setUp('spares-refuse', 3);
    for (const minReady of [4, -1, 1.5, Number.NaN]) {
      const error = await setPool(ctx, { name: 'devpool', minReady }).catch((thrown: unknown) => thrown);
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    }
    expect(await annotation('devpool-1', 'corral.dev/vdi-min-ready')).toBeUndefined();
    expect(await keepSpares(ctx)).toEqual({ kept: [], failed: [] });

    await kube.createVm(namespace, stoppedVm('golden'));
    const refused = await createPool(ctx, { name: 'other', from: 'golden', size: 2, minReady: 3 }).catch(
      (thrown: unknown) => thrown,
    );
    expect(isVdiError(refused, 'INVALID_INPUT')).toBe(true);
    expect(await kube.listVms(namespace, 'corral.dev/vdi-pool=other')).toEqual([]);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);

    await setPool(ctx, { name: 'devpool', minReady: 2 });
    const shrink = await ctx.cluster.listVms(namespace, 'corral.dev/vdi-pool=devpool');
    expect(shrink.map((vm) => vm.metadata.annotations?.['corral.dev/vdi-min-ready'])).toEqual([
      '2',
      '2',
      '2',
    ]);
    const below = await resizePool(ctx, { name: 'devpool', size: 1 }).catch((thrown: unknown) => thrown);
    expect(isVdiError(below, 'INVALID_INPUT')).toBe(true);
    expect(await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool')).toHaveLength(3);
  });

  it('writes minReady on every member a create makes and on the members a grow adds', async () => {
    const { namespace, ctx, kube } = await setUp('spares-grow', 1);
    await kube.createVm(namespace, stoppedVm('golden'));
    expect(await createPool(ctx, { name: 'kiosk', from: 'golden', size: 2, minReady: 1 })).toMatchObject({
      minReady: 1,
    });
    await resizePool(ctx, { name: 'kiosk', size: 3 });
    const vms = await kube.listVms(namespace, 'corral.dev/vdi-pool=kiosk');
    expect(
      vms.map((vm) => [vm.metadata.name, vm.metadata.annotations?.['corral.dev/vdi-min-ready']]),
    ).toEqual([
      ['kiosk-1', '1'],
      ['kiosk-2', '1'],
      ['kiosk-3', '1'],
    ]);
  });

  it('lets a claim win a spare it takes while the spare starts: the keeper never stops it', async () => {
    const { namespace, vdi, ctx, kube, power, annotation } = await setUp('spares-race', 2);
    // the spare stays Starting while the claim lands
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.startDelayMs]: '3000' } },
    });
    await setPool(ctx, { name: 'devpool', minReady: 1 });
    expect(await keepPoolSpares(ctx, { name: 'devpool' })).toMatchObject({ started: ['devpool-1'] });
    await waitFor(async () => (await power())['devpool-1'] === 'Starting', {
      describe: 'the spare to start',
    });

    // an administrator's assign takes the lowest member: the spare, still starting
    const claimed = await vdi.assign({ pool: 'devpool', identity: 'alice' });
    expect(claimed).toMatchObject({ member: 'devpool-1', warm: false });
    await setPool(ctx, { name: 'devpool', minReady: 0 });
    expect(await keepPoolSpares(ctx, { name: 'devpool' })).toMatchObject({ stopped: [], started: [] });
    await waitFor(async () => (await power())['devpool-1'] === 'Running', {
      describe: 'the claimed spare to run',
    });
    expect((await kube.getLease(namespace, 'corral-vdi-devpool-1'))?.spec.holderIdentity).toBe('alice');
    expect(await annotation('devpool-1', 'corral.dev/vdi-spare')).toBeUndefined();
  });

  it('loses the stop of a surplus spare to a claim that landed after the keeper read the pool', async () => {
    const { namespace, vdi, ctx, kube, power } = await setUp('spares-stale', 2);
    await setPool(ctx, { name: 'devpool', minReady: 1 });
    await keepPoolSpares(ctx, { name: 'devpool' });
    await waitFor(async () => (await power())['devpool-1'] === 'Running', { describe: 'the spare to run' });
    await setPool(ctx, { name: 'devpool', minReady: 0 });

    const read = await readSpares(ctx, namespace, 'devpool');
    const plan = await planFromRead(ctx, read);
    expect(plan.stop).toEqual(['devpool-1']);
    // the claim lands between the keeper's read and its stop, and takes the running spare
    const claimed = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(claimed).toMatchObject({ member: 'devpool-1', warm: true });

    const result = await carryOutSpares(ctx, read, plan);
    expect(result).toMatchObject({ stopped: [], skipped: ['devpool-1'] });
    expect((await kube.getVm(namespace, 'devpool-1'))?.spec.runStrategy).toBe('Always');
    expect((await kube.getLease(namespace, 'corral-vdi-devpool-1'))?.spec.holderIdentity).toBe('alice');
  });

  it('recovers a spare whose stop died after its Lease was taken, once that Lease expires', async () => {
    const { namespace, clock, vdi, ctx, kube, power } = await setUp('spares-crash', 1);
    await setPool(ctx, { name: 'devpool', minReady: 1 });
    await keepPoolSpares(ctx, { name: 'devpool' });
    await waitFor(async () => (await power())['devpool-1'] === 'Running', { describe: 'the spare to run' });
    await setPool(ctx, { name: 'devpool', minReady: 0 });

    const dying = new DyingCluster(cluster().kubeConfig);
    dying.dieAtStop = true;
    const dyingCtx: VdiContext = { ...ctx, cluster: dying, backends: {} };
    dyingCtx.backends.vm = createVmBackend(dyingCtx);
    await expect(keepPoolSpares(dyingCtx, { name: 'devpool' })).rejects.toThrow(/died/);
    // what the dead keeper left: the spare runs, held by its Lease, so no claim gets it meanwhile
    expect((await kube.getLease(namespace, 'corral-vdi-devpool-1'))?.spec.holderIdentity).toBe(
      'corral-vdi/resize',
    );
    const refused = await vdi
      .claim({ pool: 'devpool', identity: 'alice' })
      .catch((thrown: unknown) => thrown);
    expect(isVdiError(refused, 'NO_FREE_MEMBER')).toBe(true);
    expect(await keepPoolSpares(ctx, { name: 'devpool' })).toMatchObject({ stopped: [], skipped: [] });

    clock.advance(301_000);
    expect(await keepPoolSpares(ctx, { name: 'devpool' })).toMatchObject({ stopped: ['devpool-1'] });
    await waitFor(async () => (await power())['devpool-1'] === 'Stopped', { describe: 'the spare to stop' });
    expect(await kube.getLease(namespace, 'corral-vdi-devpool-1')).toBeUndefined();
  });
});
