import { describe, expect, it } from 'vitest';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/index.js';
import { createTestNamespace, useLocalCluster } from '../../support/cluster.js';
import { eventually, kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useLocalCluster();

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
    await eventually('the VMI runs', () => objects.getVmi('desk-1'), isRunning);

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop');
    expect(answer).toMatchObject({
      status: 503,
      body: { reason: 'ServiceUnavailable', message: 'try later' },
    });
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Always');
  });

  it('delays a start: the VM shows Starting with no VMI until start-delay-ms has passed', async () => {
    const { namespace, objects } = await setUp('start-delay');
    await objects.createVm(sampleVm('desk-1', {}, { [simulatorAnnotations.startDelayMs]: '3000' }));
    const started = Date.now();
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);

    await eventually(
      'the VM shows Starting',
      () => objects.getVm('desk-1'),
      (vm) => vm?.status?.printableStatus === 'Starting',
    );
    expect(await objects.getVmi('desk-1')).toBeUndefined();
    await eventually('the VMI runs', () => objects.getVmi('desk-1'), isRunning);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
  });

  it('delays a stop: the VM shows Stopping and keeps its VMI until stop-delay-ms has passed', async () => {
    const { namespace, objects } = await setUp('stop-delay');
    await objects.createVm(
      sampleVm('desk-1', { runStrategy: 'Always' }, { [simulatorAnnotations.stopDelayMs]: '3000' }),
    );
    await eventually('the VMI runs', () => objects.getVmi('desk-1'), isRunning);
    const stopped = Date.now();
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop')).status).toBe(202);

    await eventually(
      'the VM shows Stopping',
      () => objects.getVm('desk-1'),
      (vm) => vm?.status?.printableStatus === 'Stopping',
    );
    expect(await objects.getVmi('desk-1')).toBeDefined();
    await eventually(
      'the VMI is deleted',
      () => objects.getVmi('desk-1'),
      (vmi) => vmi === undefined,
    );
    expect(Date.now() - stopped).toBeGreaterThanOrEqual(3000);
  });

  it('keeps a never-ready VM in Scheduling while a VM without the knob becomes ready', async () => {
    const { objects } = await setUp('never-ready');
    await objects.createVm(
      sampleVm('stuck', { runStrategy: 'Always' }, { [simulatorAnnotations.neverReady]: 'true' }),
    );
    await eventually(
      'the stuck VMI exists',
      () => objects.getVmi('stuck'),
      (vmi) => vmi?.status?.phase === 'Scheduling',
    );
    await objects.createVm(sampleVm('fine', { runStrategy: 'Always' }));
    await eventually('the other VMI runs', () => objects.getVmi('fine'), isRunning);

    expect((await objects.getVmi('stuck'))?.status?.phase).toBe('Scheduling');
    expect((await objects.getVm('stuck'))?.status).toMatchObject({
      printableStatus: 'Starting',
      ready: false,
    });

    await objects.patchVm('stuck', {
      metadata: { annotations: { [simulatorAnnotations.neverReady]: null } },
    });
    await eventually('the VMI runs once the knob is gone', () => objects.getVmi('stuck'), isRunning);
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

    const vmi = await eventually('the VMI runs', () => objects.getVmi('desk-1'), isRunning);
    expect(vmi?.status?.nodeName).toBe('gpu-node-3');
    expect(vmi?.status?.interfaces?.[0]).toMatchObject({
      name: 'default',
      ipAddress: '127.42.0.7',
      ipAddresses: ['127.42.0.7'],
    });
  });
});
