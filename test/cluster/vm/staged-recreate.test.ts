import type { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import type { DeletePreconditions } from '../../../src/kube/cluster.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import type { VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { createPool, deletePool } from '../../../src/pools/pool-service.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { stagedNameFor } from '../../../src/vm/vm-clone-object.js';
import { CloneFaultCluster } from '../../support/clone-faults.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The writes of a recreate, each one a crash can come before. */
type CrashPoint = 'stage' | 'delete member' | 'clone member' | 'remove staged';

/** The adapter, dying once (a thrown error, as a process killed there) right before the named write. */
class CrashingCluster extends CloneFaultCluster {
  crashBefore: CrashPoint | undefined;

  constructor(
    kubeConfig: KubeConfig,
    readonly member: string,
  ) {
    super(kubeConfig);
  }

  private crashAt(point: CrashPoint): void {
    if (this.crashBefore !== point) return;
    this.crashBefore = undefined;
    throw new Error(`the process died before: ${point}`);
  }

  override createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    const target = clone.spec.target?.name;
    if (target === stagedNameFor(this.member)) this.crashAt('stage');
    if (target === this.member) this.crashAt('clone member');
    return super.createClone(namespace, clone);
  }

  override deleteVm(namespace: string, name: string, preconditions?: DeletePreconditions): Promise<boolean> {
    if (name === this.member) this.crashAt('delete member');
    if (name === stagedNameFor(this.member)) this.crashAt('remove staged');
    return super.deleteVm(namespace, name, preconditions);
  }
}

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const kube = new CrashingCluster(cluster().kubeConfig, 'eph-1');
  const { context } = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const ctx: VdiContext = { ...context, cluster: kube };
  ctx.backends = { vm: createVmBackend(ctx) };
  await kube.createVm(namespace, stoppedVm('golden', { app: 'desktop' }));
  await createPool(ctx, { name: 'eph', from: 'golden', size: 1, namespace, ephemeral: true });
  const backend = ctx.backends.vm;
  if (!backend) throw new Error('no VM backend');
  const reset = () => backend.resetMember({ namespace, member: 'eph-1', pool: 'eph' });
  return { namespace, kube, ctx, reset };
}

describe('a recreate that stages the replacement beside the member', () => {
  it.each<{ point: CrashPoint; leaves: 'the member as it was' | 'no member' | 'the member made again' }>([
    { point: 'stage', leaves: 'the member as it was' },
    { point: 'delete member', leaves: 'the member as it was' },
    { point: 'clone member', leaves: 'no member' },
    { point: 'remove staged', leaves: 'the member made again' },
  ])(
    'stopped before "$point" leaves $leaves, and the next recreate finishes it',
    async ({ point, leaves }) => {
      const { namespace, kube, reset } = await setUp(`staged-${point.replace(' ', '-')}`);
      const before = await kube.getVm(namespace, 'eph-1');
      kube.crashBefore = point;
      await expect(reset()).rejects.toThrow(`the process died before: ${point}`);

      const after = await kube.getVm(namespace, 'eph-1');
      if (leaves === 'the member as it was') {
        // the holder's desktop is untouched until the replacement is staged and the member's delete is asked for
        expect(after?.metadata.uid).toBe(before?.metadata.uid);
        expect(after?.metadata.deletionTimestamp).toBeUndefined();
      } else if (leaves === 'no member') {
        expect(after === undefined || after.metadata.deletionTimestamp !== undefined).toBe(true);
      } else {
        expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
      }

      expect(await reset()).toBe('recreated');
      const remade = await kube.getVm(namespace, 'eph-1');
      expect(remade?.metadata.uid).not.toBe(before?.metadata.uid);
      expect(remade?.metadata.labels).toMatchObject({
        'corral.dev/vdi-pool': 'eph',
        'corral.dev/vdi-ephemeral': 'true',
      });
      expect(remade?.metadata.annotations?.['corral.dev/vdi-source']).toBe('golden');
      expect(remade?.spec.runStrategy).toBe('Halted');
      const names = (await kube.listVms(namespace)).filter((vm) => !vm.metadata.deletionTimestamp);
      expect(names.map((vm) => vm.metadata.name).sort()).toEqual(['eph-1', 'golden']);
      expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    },
  );

  it('leaves the member as it was when the staging clone fails, and a later recreate clears the failed clone first', async () => {
    const { namespace, kube, reset } = await setUp('staged-fails');
    const before = await kube.getVm(namespace, 'eph-1');
    // the clone fails once its target VM was begun, so both leftovers are there
    kube.faults[stagedNameFor('eph-1')] = {
      [simulatorAnnotations.fail]: 'restore refused by the storage class',
      [simulatorAnnotations.failPhase]: 'CreatingTargetVM',
    };
    await expect(reset()).rejects.toMatchObject({ code: 'CLONE_FAILED' });
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.uid).toBe(before?.metadata.uid);

    delete kube.faults[stagedNameFor('eph-1')];
    expect(await reset()).toBe('recreated');
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    // KubeVirt's controller drops its finalizer after the recreate answered, so the staged VM may still be going
    const staged = await kube.getVm(namespace, stagedNameFor('eph-1'));
    expect(staged === undefined || staged.metadata.deletionTimestamp !== undefined).toBe(true);
  });

  it('removes a staged VM a recreate left behind with its pool', async () => {
    const { namespace, kube, ctx, reset } = await setUp('staged-pool-delete');
    kube.crashBefore = 'delete member';
    await expect(reset()).rejects.toThrow('the process died before');
    expect(await kube.getVm(namespace, stagedNameFor('eph-1'))).toBeDefined();

    expect(await deletePool(ctx, { name: 'eph', namespace })).toMatchObject({
      members: ['eph-1'],
      clones: 1,
    });
    const left = (await kube.listVms(namespace)).filter((vm) => !vm.metadata.deletionTimestamp);
    expect(left.map((vm) => vm.metadata.name)).toEqual(['golden']);
  });
});
