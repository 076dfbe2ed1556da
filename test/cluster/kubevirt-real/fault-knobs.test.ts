import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { createNamespaceClock, simulatorAnnotations } from '../../../src/testing/kubevirt/index.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, putSubresource } from '../simulator/simulator-support.js';

// The knobs of docs/simulator.md, expressed through KubeVirt's own virt-api and virt-controller on the shared plane.
const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  return { namespace, objects: kubevirtObjects(cluster().kubeConfig, namespace) };
}

function vmWith(
  name: string,
  annotations: Record<string, string>,
  runStrategy: VirtualMachine['spec']['runStrategy'] = 'Halted',
): VirtualMachine {
  const vm = stoppedVm(name);
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    ...vm,
    metadata: { ...vm.metadata, annotations },
    spec: { ...vm.spec, runStrategy },
  };
}

const phaseOf = (vmi: { status?: { phase?: string } } | undefined) => vmi?.status?.phase;
const isRunning = (vmi: { status?: { phase?: string } } | undefined) => phaseOf(vmi) === 'Running';

describe('the fault knobs on KubeVirt’s own controllers', () => {
  it('fails a start with fail-start: virt-api answers 500 with the message and the VM stays Halted', async () => {
    const { namespace, objects } = await setUp('real-fail-start');
    await objects.createVm(vmWith('desk-1', { [simulatorAnnotations.failStart]: 'hypervisor unreachable' }));

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start');
    expect(answer.status).toBe(500);
    expect(answer.body?.message).toContain('hypervisor unreachable');
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Halted');

    await objects.patchVm('desk-1', {
      metadata: { annotations: { [simulatorAnnotations.failStart]: null } },
    });
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
  });

  it('fails a stop with fail-stop and leaves the VM running', async () => {
    const { namespace, objects } = await setUp('real-fail-stop');
    await objects.createVm(vmWith('desk-1', { [simulatorAnnotations.failStop]: 'try later' }, 'Always'));
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop');
    expect(answer.status).toBe(500);
    expect(answer.body?.message).toContain('try later');
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Always');
    expect(phaseOf(await objects.getVmi('desk-1'))).toBe('Running');
  });

  it('delays a start until start-delay-ms has passed on the namespace clock: the VMI waits Scheduled', async () => {
    const { namespace, objects } = await setUp('real-start-delay');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    await objects.createVm(vmWith('desk-1', { [simulatorAnnotations.startDelayMs]: '3000' }));
    await objects.createVm(vmWith('witness', { [simulatorAnnotations.startDelayMs]: '2999' }));
    for (const name of ['desk-1', 'witness'])
      expect((await putSubresource(cluster().kubeConfig, namespace, name, 'start')).status).toBe(202);
    for (const name of ['desk-1', 'witness'])
      await waitFor(() => objects.getVmi(name), {
        describe: `the VMI of ${name} scheduled`,
        until: (vmi) => phaseOf(vmi) === 'Scheduled',
      });

    await clock.advance(2999);
    await waitFor(() => objects.getVmi('witness'), { describe: 'the witness VMI runs', until: isRunning });
    expect(phaseOf(await objects.getVmi('desk-1'))).toBe('Scheduled');
    expect((await objects.getVm('desk-1'))?.status?.printableStatus).toBe('Starting');
    await clock.advance(1);
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
  });

  it('counts a start-delay-ms from the VMI’s making, also when the clock moved before the stand-in looked', async () => {
    const { namespace, objects } = await setUp('real-start-delay-late');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    // never-ready keeps the stand-in from looking at the start until the clock has moved past the delay
    const knobs = { [simulatorAnnotations.startDelayMs]: '3000', [simulatorAnnotations.neverReady]: 'true' };
    await objects.createVm(vmWith('desk-1', knobs));
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI scheduled',
      until: (vmi) => phaseOf(vmi) === 'Scheduled',
    });
    await clock.advance(3000);

    await objects.patchVm('desk-1', {
      metadata: { annotations: { [simulatorAnnotations.neverReady]: null } },
    });
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
  });

  it('delays a stop until stop-delay-ms has passed on the namespace clock: the VM shows Stopping', async () => {
    const { namespace, objects } = await setUp('real-stop-delay');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const delays = { 'desk-1': '3000', witness: '2999' };
    for (const [name, delay] of Object.entries(delays)) {
      await objects.createVm(vmWith(name, { [simulatorAnnotations.stopDelayMs]: delay }, 'Always'));
      await waitFor(() => objects.getVmi(name), { describe: `the VMI of ${name} runs`, until: isRunning });
    }
    for (const name of Object.keys(delays))
      expect((await putSubresource(cluster().kubeConfig, namespace, name, 'stop')).status).toBe(202);
    for (const name of Object.keys(delays))
      await waitFor(() => objects.getVm(name), {
        describe: `${name} shows Stopping`,
        until: (vm) => vm?.status?.printableStatus === 'Stopping',
      });

    await clock.advance(2999);
    await waitFor(() => objects.getVmi('witness'), {
      describe: 'the witness VMI is gone',
      until: (vmi) => vmi === undefined,
    });
    expect(await objects.getVmi('desk-1')).toBeDefined();
    await clock.advance(1);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is gone',
      until: (vmi) => vmi === undefined,
    });
  });

  it('keeps a never-ready guest Scheduled, and reports the address the ip knob names', async () => {
    const { objects } = await setUp('real-never-ready');
    await objects.createVm(vmWith('stuck', { [simulatorAnnotations.neverReady]: 'true' }, 'Always'));
    await objects.createVm(vmWith('fine', { [simulatorAnnotations.ip]: '127.42.0.7' }, 'Always'));
    const fine = await waitFor(() => objects.getVmi('fine'), {
      describe: 'the other VMI runs',
      until: isRunning,
    });
    expect(fine?.status?.interfaces?.[0]).toMatchObject({ ipAddress: '127.42.0.7' });
    await waitFor(() => objects.getVmi('stuck'), {
      describe: 'the stuck VMI scheduled',
      until: (vmi) => phaseOf(vmi) === 'Scheduled',
    });
    const stuck = (await objects.getVm('stuck'))?.status;
    expect(stuck?.printableStatus).toBe('Starting');
    // KubeVirt leaves out a false ready
    expect(stuck?.ready ?? false).toBe(false);

    await objects.patchVm('stuck', {
      metadata: { annotations: { [simulatorAnnotations.neverReady]: null } },
    });
    await waitFor(() => objects.getVmi('stuck'), {
      describe: 'the VMI runs once the knob is gone',
      until: isRunning,
    });
  });
});
