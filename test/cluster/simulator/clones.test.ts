import { describe, expect, it } from 'vitest';
import type { VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { createNamespaceClock, simulatorAnnotations } from '../../../src/testing/kubevirt/index.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const objects = kubevirtObjects(cluster().kubeConfig, namespace);
  const golden = sampleVm(
    'golden',
    {},
    { 'corral.dev/vdi-source': 'keep-me', 'corral.dev/vdi-assigned-to': 'drop-me' },
  );
  golden.metadata.labels = { 'corral.dev/vdi-pool': 'golden-pool', team: 'blue' };
  const template = golden.spec.template as NonNullable<typeof golden.spec.template>;
  template.metadata = {
    labels: { app: 'desktop', 'corral.dev/vdi-pool': 'golden-pool' },
    annotations: { note: 'template' },
  };
  await objects.createVm(golden);
  return { namespace, objects };
}

function cloneOf(
  name: string,
  spec: Partial<VirtualMachineClone['spec']>,
  annotations: Record<string, string> = {},
): VirtualMachineClone {
  return {
    metadata: { name, annotations },
    spec: {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: `${name}-vm` },
      ...spec,
    },
  };
}

const isDone = (clone: VirtualMachineClone | undefined) =>
  clone?.status?.phase === 'Succeeded' || clone?.status?.phase === 'Failed';

describe('the VirtualMachineClone controller', () => {
  it('creates the target from the source with label and annotation filters and JSON patches, then succeeds', async () => {
    const { objects } = await setUp('clone');
    await objects.createClone(
      cloneOf('c1', {
        labelFilters: ['*', '!corral.dev/vdi-pool'],
        annotationFilters: ['corral.dev/vdi-source'],
        template: { labelFilters: ['*', '!corral.dev/*'] },
        patches: [
          '{"op":"add","path":"/spec/template/spec/domain/devices/interfaces/0/model","value":"virtio"}',
          '{"op":"add","path":"/metadata/labels/corral.dev~1vdi-pool","value":"devpool"}',
        ],
      }),
    );

    const clone = await waitFor(() => objects.getClone('c1'), {
      describe: 'the clone finishes',
      until: isDone,
    });
    expect(clone?.status?.phase).toBe('Succeeded');
    expect(clone?.status?.conditions).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'Ready', status: 'True' })]),
    );
    expect(clone?.status?.targetName).toBe('c1-vm');

    const target = await objects.getVm('c1-vm');
    expect(target?.metadata.labels).toEqual({ team: 'blue', 'corral.dev/vdi-pool': 'devpool' });
    expect(target?.metadata.annotations?.['corral.dev/vdi-source']).toBe('keep-me');
    expect(target?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(target?.spec.template?.metadata?.labels).toEqual({ app: 'desktop' });
    expect(target?.spec.template?.metadata?.annotations).toEqual({ note: 'template' });
    const devices = target?.spec.template?.spec?.domain?.devices;
    expect(devices?.interfaces).toEqual([{ name: 'default', masquerade: {}, model: 'virtio' }]);
    expect(devices?.gpus).toEqual([{ name: 'gpu1', deviceName: 'nvidia.com/A10' }]);
    expect(target?.spec.runStrategy).toBe('Halted');
    expect(target?.status?.restoreInProgress).toBeUndefined();
  });

  it('deletes a finished clone once its target VM is gone, as KubeVirt’s clone controller does', async () => {
    const { objects } = await setUp('clone-gone');
    await objects.createClone(cloneOf('c-gone', {}));
    await waitFor(() => objects.getClone('c-gone'), { describe: 'the clone finishes', until: isDone });
    expect((await objects.getClone('c-gone'))?.status?.phase).toBe('Succeeded');
    await objects.deleteVm('c-gone-vm');
    await waitFor(async () => (await objects.getClone('c-gone')) === undefined, {
      describe: 'the finished clone of the deleted VM to go',
    });
  });

  it('creates the target VM while the clone is still in progress, and starts it only after the restore', async () => {
    const { namespace, objects } = await setUp('clone-early');
    // each phase lasts 3 s of the namespace's clock, which moves only when the test moves it
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    await objects.patchVm('golden', { spec: { runStrategy: 'Always' } });
    await objects.createClone(cloneOf('c1', {}, { [simulatorAnnotations.phaseDelayMs]: '3000' }));
    const inPhase = (phase: string) =>
      waitFor(() => objects.getClone('c1'), {
        describe: `the clone in ${phase}`,
        until: (clone) => clone?.status?.phase === phase,
      });
    await inPhase('SnapshotInProgress');
    expect(await objects.getVm('c1-vm')).toBeUndefined();

    await clock.advance(3000);
    const clone = await inPhase('RestoreInProgress');
    const restoring = await waitFor(() => objects.getVm('c1-vm'), {
      describe: 'the target shows the restore',
      until: (vm) =>
        vm?.status?.restoreInProgress !== undefined && vm.status.printableStatus === 'Provisioning',
    });
    expect(restoring?.spec.runStrategy).toBe('Always');
    expect(restoring?.status?.restoreInProgress).toBe(`tmp-restore-${clone?.metadata.uid}`);
    expect((await objects.getClone('c1'))?.status?.phase).toBe('RestoreInProgress');
    expect(await objects.getVmi('c1-vm')).toBeUndefined();

    await clock.advance(3000);
    await inPhase('CreatingTargetVM');
    await clock.advance(3000);
    await inPhase('Succeeded');
    await waitFor(() => objects.getVmi('c1-vm'), {
      describe: 'the target runs',
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
  });

  it('accepts a v1alpha1 clone and names the target itself when spec.target is omitted', async () => {
    const { objects } = await setUp('clone-alpha');
    const clone = cloneOf('c1', {});
    delete clone.spec.target;
    const created = await objects.createClone(clone, 'v1alpha1');

    const done = await waitFor(() => objects.getClone('c1'), {
      describe: 'the clone finishes',
      until: isDone,
    });
    expect(done?.status?.phase).toBe('Succeeded');
    const uidPrefix = (created.metadata.uid ?? '').replace(/-/g, '').slice(0, 5);
    expect(done?.status?.targetName).toBe(`golden-clone-${uidPrefix}`);
    expect(await objects.getVm(`golden-clone-${uidPrefix}`)).toBeDefined();
  });

  it.each([
    [
      'a missing source VM',
      { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'nowhere' } },
      'does not exist',
    ],
    ['a patch that cannot apply', { patches: ['{"op":"remove","path":"/spec/nothing"}'] }, 'patch failed'],
  ])('fails a clone with %s, with the reason in its Ready condition', async (_, spec, reason) => {
    const { objects } = await setUp('clone-invalid');
    await objects.createClone(cloneOf('c1', spec as Partial<VirtualMachineClone['spec']>));

    const clone = await waitFor(() => objects.getClone('c1'), {
      describe: 'the clone finishes',
      until: isDone,
    });
    expect(clone?.status?.phase).toBe('Failed');
    const ready = clone?.status?.conditions?.find((condition) => condition.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'Failed' });
    expect(ready?.message).toContain(reason);
    expect(await objects.getVm('c1-vm')).toBeUndefined();
  });

  it('fails a clone that a fault knob fails, in the phase the knob names, leaving the half-made target', async () => {
    const { objects } = await setUp('clone-fail');
    await objects.createClone(
      cloneOf(
        'c1',
        {},
        {
          [simulatorAnnotations.fail]: 'storage quota exceeded',
          [simulatorAnnotations.failPhase]: 'RestoreInProgress',
        },
      ),
    );

    const clone = await waitFor(() => objects.getClone('c1'), {
      describe: 'the clone finishes',
      until: isDone,
    });
    expect(clone?.status?.phase).toBe('Failed');
    expect(clone?.status?.conditions?.find((condition) => condition.type === 'Ready')?.message).toBe(
      'storage quota exceeded',
    );
    // the VM controller may show the target Stopped a moment before the clone controller's release lands
    await waitFor(() => objects.getVm('c1-vm'), {
      describe: 'the target to be released: Stopped, with no restore in progress',
      until: (vm) => vm?.status?.printableStatus === 'Stopped' && vm.status.restoreInProgress === undefined,
    });
  });

  it('keeps a never-finish clone in RestoreInProgress with its target created, while other clones finish', async () => {
    const { objects } = await setUp('clone-stuck');
    await objects.createClone(cloneOf('stuck', {}, { [simulatorAnnotations.neverFinish]: 'true' }));
    await waitFor(() => objects.getVm('stuck-vm'), {
      describe: 'the target VM appears',
      until: (vm) => vm?.status?.printableStatus === 'Provisioning',
    });

    await objects.createClone(cloneOf('later', {}));
    await waitFor(() => objects.getClone('later'), {
      describe: 'the later clone succeeds',
      until: (c) => c?.status?.phase === 'Succeeded',
    });
    expect((await objects.getClone('stuck'))?.status?.phase).toBe('RestoreInProgress');
    expect((await objects.getVm('stuck-vm'))?.status?.printableStatus).toBe('Provisioning');
  });
});
