import { describe, expect, it } from 'vitest';
import { claimDesktop } from '../../../src/claims/claim-desktop.js';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError, VdiError } from '../../../src/errors.js';
import type { DeletePreconditions } from '../../../src/kube/cluster.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { deletePool, resizePool } from '../../../src/pools/pool-service.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

/**
 * The adapter a shrink or pool delete runs through: a test can run a claim just before the first write the
 * removal makes (every write waits for it), and make one member delete or Lease delete fail, as a process that
 * dies there.
 */
class RemovalCluster extends KubeCluster {
  beforeFirstWrite: (() => Promise<void>) | undefined;
  private firstWrite: Promise<void> | undefined;
  failNextVmDelete = false;
  failNextLeaseDelete = false;

  private async write(): Promise<void> {
    const run = this.beforeFirstWrite;
    if (run) {
      this.beforeFirstWrite = undefined;
      this.firstWrite = run();
    }
    await this.firstWrite;
  }

  override async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    await this.write();
    return await super.createLease(namespace, lease);
  }

  override async replaceLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    await this.write();
    return await super.replaceLease(namespace, lease);
  }

  override async deleteVm(namespace: string, name: string, preconditions?: DeletePreconditions) {
    await this.write();
    if (this.failNextVmDelete) {
      this.failNextVmDelete = false;
      throw new VdiError('CLUSTER_UNAVAILABLE', 'the process died before deleting the member');
    }
    return await super.deleteVm(namespace, name, preconditions);
  }

  override async deleteLease(namespace: string, name: string, preconditions: DeletePreconditions) {
    if (this.failNextLeaseDelete) {
      this.failNextLeaseDelete = false;
      throw new VdiError('CLUSTER_UNAVAILABLE', 'the process died before deleting the Lease');
    }
    return await super.deleteLease(namespace, name, preconditions);
  }
}

async function setUp(prefix: string, size: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const kube = new RemovalCluster(cluster().kubeConfig);
  const ctx: VdiContext = { ...vdi.context, cluster: kube };
  await waitFor(
    async () => (await kube.listVms(namespace)).every((vm) => vm.status?.printableStatus === 'Stopped'),
    { describe: 'the members to report Stopped' },
  );
  // claims run beside the removal, through the plain adapter
  const claim = (identity: string) =>
    claimDesktop(vdi.context, { pool: 'devpool', identity }, { actor: undefined, order: 'lowest' });
  const members = async () =>
    (await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool'))
      .filter((vm) => vm.metadata.deletionTimestamp === undefined)
      .map((vm) => vm.metadata.name)
      .sort();
  const leases = async () =>
    (await kube.listLeases(namespace))
      .map((lease) => [lease.metadata.name, lease.spec.holderIdentity])
      .sort((left, right) => String(left[0]).localeCompare(String(right[0])));
  return { namespace, clock, vdi, kube, ctx, claim, members, leases };
}

describe('a shrink or pool delete racing a claim, against the real apiserver', () => {
  it('keeps the desktop of a claim that lands after the shrink chose its member', async () => {
    const { kube, ctx, claim, members, leases } = await setUp('shrinkrace', 3);
    await claim('bob');
    await claim('carol');
    let alice: Awaited<ReturnType<typeof claim>> | undefined;
    kube.beforeFirstWrite = async () => {
      alice = await claim('alice');
    };
    const result = await resizePool(ctx, { name: 'devpool', size: 2 });
    expect(alice?.member).toBe('devpool-3');
    expect(result).toMatchObject({ removed: [], skipped: ['devpool-3'], size: 3 });
    expect(await members()).toEqual(['devpool-1', 'devpool-2', 'devpool-3']);
    expect(await leases()).toEqual([
      ['corral-vdi-devpool-1', 'bob'],
      ['corral-vdi-devpool-2', 'carol'],
      ['corral-vdi-devpool-3', 'alice'],
    ]);
  });

  it('refuses a pool delete when a claim lands after the delete read the pool, naming it, and deletes nothing', async () => {
    const { kube, ctx, claim, members, leases } = await setUp('deleterace', 2);
    let alice: Awaited<ReturnType<typeof claim>> | undefined;
    kube.beforeFirstWrite = async () => {
      alice = await claim('alice');
    };
    const refused = await deletePool(ctx, { name: 'devpool' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isVdiError(refused, 'POOL_IN_USE')).toBe(true);
    expect((refused as VdiError).message).toMatch(new RegExp(`${alice?.member} \\(alice\\)`));
    expect(await members()).toEqual(['devpool-1', 'devpool-2']);
    expect(await leases()).toEqual([[`corral-vdi-${alice?.member}`, 'alice']]);

    const forced = await deletePool(ctx, { name: 'devpool', force: true });
    expect(forced).toMatchObject({ forced: true, leases: 1 });
    expect(await members()).toEqual([]);
    expect(await leases()).toEqual([]);
  });

  it('refuses a pool delete while a claimed member is being deleted (a reset making it again), and keeps the claim', async () => {
    const { namespace, kube, ctx, claim, leases } = await setUp('deletereset', 2);
    const alice = await claim('alice');
    // KubeVirt's finalizer keeps a deleted VM until its instance is gone; a reset deletes and makes it again
    await kube.patchVm(namespace, alice.member, { metadata: { finalizers: ['corral.dev/test-hold'] } });
    await kube.deleteVm(namespace, alice.member);
    await waitFor(async () => (await kube.getVm(namespace, alice.member))?.metadata.deletionTimestamp, {
      describe: `${alice.member} to show its deletion`,
    });
    const refused = await deletePool(ctx, { name: 'devpool' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await kube.patchVm(namespace, alice.member, { metadata: { finalizers: null } });
    expect(isVdiError(refused, 'POOL_IN_USE')).toBe(true);
    expect((refused as VdiError).message).toContain(`${alice.member} (alice)`);
    expect(await leases()).toEqual([[`corral-vdi-${alice.member}`, 'alice']]);
  });

  it('deletes a free member that is already being deleted with the rest of the pool', async () => {
    const { namespace, kube, ctx, members, leases } = await setUp('deletegoing', 2);
    await kube.patchVm(namespace, 'devpool-2', { metadata: { finalizers: ['corral.dev/test-hold'] } });
    await kube.deleteVm(namespace, 'devpool-2');
    await waitFor(async () => (await kube.getVm(namespace, 'devpool-2'))?.metadata.deletionTimestamp, {
      describe: 'devpool-2 to show its deletion',
    });
    const deleted = await deletePool(ctx, { name: 'devpool' });
    await kube.patchVm(namespace, 'devpool-2', { metadata: { finalizers: null } });
    expect(deleted).toMatchObject({ members: ['devpool-1', 'devpool-2'], forced: false });
    await waitFor(
      async () => (await members()).length === 0 && (await kube.listVms(namespace)).length === 0,
      {
        describe: 'both members to be gone',
      },
    );
    expect(await leases()).toEqual([]);
  });

  it('drops the Lease a shrink that died after deleting its member left, on the next resize', async () => {
    const { kube, ctx, claim, members, leases } = await setUp('shrinkgone', 3);
    kube.failNextLeaseDelete = true;
    await expect(resizePool(ctx, { name: 'devpool', size: 2 })).rejects.toThrow(/before deleting the Lease/);
    await waitFor(async () => (await kube.getVm(ctx.defaultNamespace, 'devpool-3')) === undefined, {
      describe: 'devpool-3 to be gone',
    });
    expect(await leases()).toEqual([['corral-vdi-devpool-3', 'corral-vdi/resize']]);

    await claim('alice');
    expect(await resizePool(ctx, { name: 'devpool', size: 2 })).toMatchObject({ removed: [], size: 2 });
    expect(await members()).toEqual(['devpool-1', 'devpool-2']);
    expect(await leases()).toEqual([['corral-vdi-devpool-1', 'alice']]);
  });

  it('finishes the Leases a pool delete that died after deleting every member left, on the next delete', async () => {
    const { namespace, kube, ctx, leases } = await setUp('deletegone', 1);
    kube.failNextLeaseDelete = true;
    await expect(deletePool(ctx, { name: 'devpool' })).rejects.toThrow(/before deleting the Lease/);
    await waitFor(async () => (await kube.listVms(namespace)).length === 0, {
      describe: 'devpool-1 to be gone',
    });
    expect(await leases()).toEqual([['corral-vdi-devpool-1', 'corral-vdi/resize']]);

    expect(await deletePool(ctx, { name: 'devpool' })).toMatchObject({ members: [] });
    expect(await leases()).toEqual([]);
    await expect(deletePool(ctx, { name: 'devpool' })).rejects.toMatchObject({ code: 'POOL_NOT_FOUND' });
  });

  it('keeps a member a shrink died removing from claims, and removes it on the next shrink', async () => {
    const { kube, ctx, clock, claim, members, leases } = await setUp('shrinkheld', 2);
    kube.failNextVmDelete = true;
    await expect(resizePool(ctx, { name: 'devpool', size: 1 })).rejects.toThrow(/before deleting the member/);
    expect(await members()).toEqual(['devpool-1', 'devpool-2']);
    expect(await leases()).toEqual([['corral-vdi-devpool-2', 'corral-vdi/resize']]);

    expect((await claim('alice')).member).toBe('devpool-1');
    clock.advance(299_000);
    expect(isVdiError(await claim('bob').catch((error: unknown) => error), 'NO_FREE_MEMBER')).toBe(true);

    const shrunk = await resizePool(ctx, { name: 'devpool', size: 1 });
    expect(shrunk).toMatchObject({ removed: ['devpool-2'], skipped: [], size: 1 });
    expect(await members()).toEqual(['devpool-1']);
    expect(await leases()).toEqual([['corral-vdi-devpool-1', 'alice']]);
  });

  it('hands a member a shrink died removing to a claim once that Lease expires', async () => {
    const { kube, ctx, clock, claim, leases } = await setUp('shrinkexpiry', 2);
    kube.failNextVmDelete = true;
    await expect(resizePool(ctx, { name: 'devpool', size: 1 })).rejects.toThrow(/before deleting the member/);
    expect((await claim('alice')).member).toBe('devpool-1');
    clock.advance(300_000);
    expect(isVdiError(await claim('bob').catch((error: unknown) => error), 'NO_FREE_MEMBER')).toBe(true);
    clock.advance(1_000);
    expect((await claim('bob')).member).toBe('devpool-2');
    expect(await leases()).toEqual([
      ['corral-vdi-devpool-1', 'alice'],
      ['corral-vdi-devpool-2', 'bob'],
    ]);
  });
});
