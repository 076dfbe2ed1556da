import { Watch } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/index.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  return { namespace, objects: kubevirtObjects(cluster().kubeConfig, namespace) };
}

const isRunning = (vmi: { status?: { phase?: string } } | undefined) => vmi?.status?.phase === 'Running';

describe('the simulated VM controller', () => {
  it('walks a new VMI through Scheduling and Scheduled to Running, one status write each', async () => {
    const { namespace, objects } = await setUp('phases');
    const phases: string[] = [];
    const watch = await new Watch(cluster().kubeConfig).watch(
      `/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances`,
      {},
      (_type, vmi: VirtualMachineInstance) => {
        const phase = vmi.status?.phase;
        if (phase && phases.at(-1) !== phase) phases.push(phase);
      },
      () => {},
    );
    try {
      await objects.createVm(sampleVm('desk-1', { runStrategy: 'Always' }));
      await waitFor(async () => phases, {
        describe: 'the watch sees Running',
        until: (seen) => seen.includes('Running'),
      });
      expect(phases).toEqual(['Scheduling', 'Scheduled', 'Running']);
    } finally {
      watch.abort();
    }
  });

  it('copies the template devices, labels and display settings onto the VMI', async () => {
    const { objects } = await setUp('template');
    const vm = sampleVm('desk-1', { runStrategy: 'Always' });
    const devices = vm.spec.template?.spec?.domain?.devices as Record<string, unknown>;
    Object.assign(devices, {
      hostDevices: [{ name: 'usb1', deviceName: 'example.com/token' }],
      autoattachGraphicsDevice: false,
      autoattachSerialConsole: true,
      clientPassthrough: {},
    });
    await objects.createVm(vm);

    const vmi = await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
    expect(vmi?.spec?.domain?.devices).toMatchObject({
      gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10' }],
      hostDevices: [{ name: 'usb1', deviceName: 'example.com/token' }],
      autoattachGraphicsDevice: false,
      autoattachSerialConsole: true,
      clientPassthrough: {},
    });
    expect(vmi?.metadata.labels).toMatchObject({ app: 'desktop', 'vm.kubevirt.io/name': 'desk-1' });
  });

  it('deletes the VMI of a deleted VM, which no garbage collector would', async () => {
    const { objects } = await setUp('delete');
    await objects.createVm(sampleVm('desk-1', { runStrategy: 'Always' }));
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });

    await objects.deleteVm('desk-1');
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is deleted',
      until: (vmi) => vmi === undefined,
    });
  });

  it('replaces a VMI whose guest shut down when the run strategy is Always, and keeps it for Manual', async () => {
    const { namespace, objects } = await setUp('final');
    await objects.createVm(sampleVm('always', { runStrategy: 'Always' }));
    await objects.createVm(
      sampleVm('manual', { runStrategy: 'Manual' }, { [simulatorAnnotations.ip]: '127.9.0.9' }),
    );
    const first = await waitFor(() => objects.getVmi('always'), {
      describe: 'the Always VMI runs',
      until: isRunning,
    });
    await objects.patchVmiStatus('always', { phase: 'Succeeded' });
    const second = await waitFor(() => objects.getVmi('always'), {
      describe: 'a new VMI runs',
      until: (vmi) => isRunning(vmi) && vmi?.metadata.uid !== first?.metadata.uid,
    });
    expect(second?.status?.interfaces?.[0]?.ipAddress).toBe(first?.status?.interfaces?.[0]?.ipAddress);

    expect((await putSubresource(cluster().kubeConfig, namespace, 'manual', 'start')).status).toBe(202);
    await waitFor(() => objects.getVmi('manual'), { describe: 'the Manual VMI runs', until: isRunning });
    await objects.patchVmiStatus('manual', { phase: 'Succeeded' });
    const stopped = await waitFor(() => objects.getVm('manual'), {
      describe: 'the Manual VM shows Stopped',
      until: (vm) => vm?.status?.printableStatus === 'Stopped',
    });
    expect(stopped?.status?.created).toBe(true);
    expect((await objects.getVmi('manual'))?.status?.phase).toBe('Succeeded');
  });
});
