import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import {
  createNamespaceClock,
  setSimulatorPaused,
  simulatorAnnotations,
} from '../../../src/testing/kubevirt/index.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  return { namespace, objects: kubevirtObjects(cluster().kubeConfig, namespace) };
}

const isRunning = (vmi: { status?: { phase?: string } } | undefined) => vmi?.status?.phase === 'Running';

describe('the VM fault knobs', () => {
  it.each([
    ['409 the VM is locked by a migration', 409, 'the VM is locked by a migration'],
    ['hypervisor unreachable', 500, 'hypervisor unreachable'],
  ])('fails a start with fail-start=%j as HTTP %i, changing nothing', async (knob, status, message) => {
    const { namespace, objects } = await setUp('fail-start');
    await objects.createVm(sampleVm('desk-1', {}, { [simulatorAnnotations.failStart]: knob }));

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start');
    expect(answer.status).toBe(status);
    expect(answer.body?.message).toContain(message);
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Halted');
  });

  it('fails a stop with fail-stop and leaves the VM running', async () => {
    const { namespace, objects } = await setUp('fail-stop');
    await objects.createVm(
      sampleVm('desk-1', { runStrategy: 'Always' }, { [simulatorAnnotations.failStop]: '503 try later' }),
    );
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop');
    expect(answer).toMatchObject({
      status: 503,
      body: { reason: 'ServiceUnavailable', message: 'try later' },
    });
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Always');
  });

  it('delays a start: the VM shows Starting with no VMI until start-delay-ms has passed on the namespace clock', async () => {
    const { namespace, objects } = await setUp('start-delay');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    // a witness one millisecond sooner: once its VMI exists, the simulator has seen the clock's move
    await objects.createVm(sampleVm('desk-1', {}, { [simulatorAnnotations.startDelayMs]: '3000' }));
    await objects.createVm(sampleVm('witness', {}, { [simulatorAnnotations.startDelayMs]: '2999' }));
    for (const name of ['desk-1', 'witness'])
      expect((await putSubresource(cluster().kubeConfig, namespace, name, 'start')).status).toBe(202);

    // both wait from the clock's start only once the simulator has seen them want to run
    for (const name of ['desk-1', 'witness'])
      await waitFor(() => objects.getVm(name), {
        describe: `${name} shows Starting`,
        until: (vm) => vm?.status?.printableStatus === 'Starting',
      });
    expect(await objects.getVmi('desk-1')).toBeUndefined();
    await clock.advance(2999);
    await waitFor(() => objects.getVmi('witness'), { describe: 'the witness VMI runs', until: isRunning });
    expect(await objects.getVmi('desk-1')).toBeUndefined();
    expect((await objects.getVm('desk-1'))?.status?.printableStatus).toBe('Starting');
    await clock.advance(1);
    await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
  });

  it('delays a stop: the VM shows Stopping and keeps its VMI until stop-delay-ms has passed on the namespace clock', async () => {
    const { namespace, objects } = await setUp('stop-delay');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const delays = { 'desk-1': '3000', witness: '2999' };
    for (const [name, delay] of Object.entries(delays)) {
      await objects.createVm(
        sampleVm(name, { runStrategy: 'Always' }, { [simulatorAnnotations.stopDelayMs]: delay }),
      );
      await waitFor(() => objects.getVmi(name), { describe: `the VMI of ${name} runs`, until: isRunning });
    }
    for (const name of Object.keys(delays))
      expect((await putSubresource(cluster().kubeConfig, namespace, name, 'stop')).status).toBe(202);

    for (const name of Object.keys(delays))
      await waitFor(() => objects.getVm(name), {
        describe: `${name} shows Stopping`,
        until: (vm) => vm?.status?.printableStatus === 'Stopping',
      });
    expect(await objects.getVmi('desk-1')).toBeDefined();
    await clock.advance(2999);
    await waitFor(() => objects.getVmi('witness'), {
      describe: 'the witness VMI is deleted',
      until: (vmi) => vmi === undefined,
    });
    expect(await objects.getVmi('desk-1')).toBeDefined();
    await clock.advance(1);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is deleted',
      until: (vmi) => vmi === undefined,
    });
  });

  it('keeps a never-ready VM in Scheduling while a VM without the knob becomes ready', async () => {
    const { objects } = await setUp('never-ready');
    await objects.createVm(
      sampleVm('stuck', { runStrategy: 'Always' }, { [simulatorAnnotations.neverReady]: 'true' }),
    );
    await waitFor(() => objects.getVmi('stuck'), {
      describe: 'the stuck VMI exists',
      until: (vmi) => vmi?.status?.phase === 'Scheduling',
    });
    await objects.createVm(sampleVm('fine', { runStrategy: 'Always' }));
    await waitFor(() => objects.getVmi('fine'), { describe: 'the other VMI runs', until: isRunning });

    expect((await objects.getVmi('stuck'))?.status?.phase).toBe('Scheduling');
    expect((await objects.getVm('stuck'))?.status).toMatchObject({
      printableStatus: 'Starting',
      ready: false,
    });

    await objects.patchVm('stuck', {
      metadata: { annotations: { [simulatorAnnotations.neverReady]: null } },
    });
    await waitFor(() => objects.getVmi('stuck'), {
      describe: 'the VMI runs once the knob is gone',
      until: isRunning,
    });
  });

  it('reports the address and node that the ip and node knobs name', async () => {
    const { objects } = await setUp('overrides');
    await objects.createVm(
      sampleVm(
        'desk-1',
        { runStrategy: 'Always' },
        { [simulatorAnnotations.ip]: '127.42.0.7', [simulatorAnnotations.node]: 'gpu-node-3' },
      ),
    );

    const vmi = await waitFor(() => objects.getVmi('desk-1'), { describe: 'the VMI runs', until: isRunning });
    expect(vmi?.status?.nodeName).toBe('gpu-node-3');
    expect(vmi?.status?.interfaces?.[0]).toMatchObject({
      name: 'default',
      ipAddress: '127.42.0.7',
      ipAddresses: ['127.42.0.7'],
    });
  });
});

describe('the namespace knobs', () => {
  it('leaves the VMs of a paused namespace alone until it is resumed, as if KubeVirt were down', async () => {
    const { namespace, objects } = await setUp('paused');
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    await objects.createVm(sampleVm('desk-1', { runStrategy: 'Always' }));
    // a witness created later in a namespace that is not paused
    const other = await setUp('not-paused');
    await other.objects.createVm(sampleVm('desk-1', { runStrategy: 'Always' }));
    await waitFor(() => other.objects.getVmi('desk-1'), {
      describe: 'the witness VMI runs',
      until: isRunning,
    });

    expect(await objects.getVmi('desk-1')).toBeUndefined();
    expect((await objects.getVm('desk-1'))?.status).toBeUndefined();
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI runs once resumed',
      until: isRunning,
    });
  });

  it('holds a clone in its phase until phase-delay-ms has passed on the namespace clock', async () => {
    const { namespace, objects } = await setUp('clone-clock');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    await objects.createVm(sampleVm('golden'));
    await objects.createClone({
      metadata: { name: 'copy', annotations: { [simulatorAnnotations.phaseDelayMs]: '60000' } },
      spec: {
        source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' },
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'copy-vm' },
      },
    });
    await waitFor(() => objects.getClone('copy'), {
      describe: 'the clone in SnapshotInProgress',
      until: (clone) => clone?.status?.phase === 'SnapshotInProgress',
    });
    for (const phase of ['RestoreInProgress', 'CreatingTargetVM', 'Succeeded']) {
      await clock.advance(60_000);
      await waitFor(() => objects.getClone('copy'), {
        describe: `the clone in ${phase}`,
        until: (clone) => clone?.status?.phase === phase,
      });
    }
    expect(await objects.getVm('copy-vm')).toBeDefined();
  });

  it('refuses a namespace clock that is not a time or moves backwards, changing nothing', async () => {
    const { namespace } = await setUp('bad-clock');
    const kubeConfig = cluster().kubeConfig;
    const annotationsOf = async () =>
      (await kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: namespace })).metadata?.annotations;

    const notATime = await createNamespaceClock(kubeConfig, namespace, 'soon').catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(notATime, 'INVALID_INPUT')).toBe(true);
    expect(await annotationsOf()).toBeUndefined();

    const clock = await createNamespaceClock(kubeConfig, namespace, '2026-07-02T12:00:00Z');
    const backwards = await clock.advance(-1).catch((caught: unknown) => caught);
    expect(isVdiError(backwards, 'INVALID_INPUT')).toBe(true);
    expect(clock.now().toISOString()).toBe('2026-07-02T12:00:00.000Z');
    expect((await annotationsOf())?.[simulatorAnnotations.clock]).toBe('2026-07-02T12:00:00.000Z');
  });
});
