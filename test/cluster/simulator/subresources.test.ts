import { createConnection, createServer } from 'node:net';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, putSubresource, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  return { namespace, objects: kubevirtObjects(cluster().kubeConfig, namespace) };
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the start, stop and restart subresources', () => {
  it('starts a Halted VM into a Running VMI with its own loopback address that a test can listen on', async () => {
    const { namespace, objects } = await setUp('start');
    await objects.createVm(sampleVm('desk-1'));

    const answer = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start');
    expect(answer.status).toBe(202);
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Always');

    const vmi = await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI runs',
      until: (v) => v?.status?.phase === 'Running',
    });
    const address = vmi?.status?.interfaces?.[0]?.ipAddress ?? '';
    expect(address).toMatch(/^127\.\d+\.\d+\.\d+$/);
    expect(address).not.toBe('127.0.0.1');
    expect(vmi?.status?.nodeName).toBe('sim-node-1');
    expect(vmi?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'VirtualMachine', name: 'desk-1' });
    expect(vmi?.spec?.domain?.devices?.gpus).toEqual([{ name: 'gpu1', deviceName: 'nvidia.com/A10' }]);
    const vm = await waitFor(() => objects.getVm('desk-1'), {
      describe: 'the VM is ready',
      until: (v) => v?.status?.ready === true,
    });
    expect(vm?.status).toMatchObject({ printableStatus: 'Running', ready: true, created: true });

    const listener = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => listener.listen(3389, address, resolve));
    try {
      expect(await canConnect(address, 3389)).toBe(true);
    } finally {
      listener.close();
    }
  });

  it('answers 409 "already running" to a second start and 404 for a VM that does not exist', async () => {
    const { namespace, objects } = await setUp('start-twice');
    await objects.createVm(sampleVm('desk-1'));
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI exists',
      until: (v) => v?.status?.phase !== undefined,
    });

    const again = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start');
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect(again.body?.message).toContain('VM is already running');

    const missing = await putSubresource(cluster().kubeConfig, namespace, 'nobody', 'start');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ reason: 'NotFound' });
  });

  it('stops a running VM: the VMI goes away, the VM shows Stopped, and a second stop is 409 "not running"', async () => {
    const { namespace, objects } = await setUp('stop');
    await objects.createVm(sampleVm('desk-1', { runStrategy: 'Always' }));
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI runs',
      until: (v) => v?.status?.phase === 'Running',
    });

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop')).status).toBe(202);
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Halted');
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is deleted',
      until: (v) => v === undefined,
    });
    const vm = await waitFor(() => objects.getVm('desk-1'), {
      describe: 'the VM shows Stopped',
      until: (v) => v?.status?.printableStatus === 'Stopped',
    });
    expect(vm?.status).toMatchObject({ ready: false, created: false });

    const again = await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop');
    expect(again.status).toBe(409);
    expect(again.body?.message).toContain('VM is not running');
  });

  it('gives each VM a distinct address and keeps it across a stop and a start', async () => {
    const { namespace, objects } = await setUp('addresses');
    const names = ['a', 'b', 'c', 'd'];
    await Promise.all(names.map((name) => objects.createVm(sampleVm(name, { runStrategy: 'Always' }))));
    const addressOf = async (name: string) => {
      const vmi = await waitFor(() => objects.getVmi(name), {
        describe: `${name} runs`,
        until: (v) => v?.status?.phase === 'Running',
      });
      return vmi?.status?.interfaces?.[0]?.ipAddress;
    };
    const addresses = await Promise.all(names.map(addressOf));
    expect(new Set(addresses).size).toBe(names.length);

    expect((await putSubresource(cluster().kubeConfig, namespace, 'a', 'stop')).status).toBe(202);
    await waitFor(() => objects.getVmi('a'), {
      describe: 'the VMI of a is deleted',
      until: (v) => v === undefined,
    });
    expect((await putSubresource(cluster().kubeConfig, namespace, 'a', 'start')).status).toBe(202);
    expect(await addressOf('a')).toBe(addresses[0]);
  });

  it('lets RBAC decide: 403 without update on virtualmachines/start, 202 once a Role grants it', async () => {
    const { namespace, objects } = await setUp('rbac');
    await objects.createVm(sampleVm('desk-1'));
    const bob = cluster().userKubeConfig('bob');

    const denied = await putSubresource(bob, namespace, 'desk-1', 'start');
    expect(denied.status).toBe(403);
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Halted');

    const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'vm-starter' },
        rules: [
          {
            apiGroups: ['subresources.kubevirt.io'],
            resources: ['virtualmachines/start'],
            verbs: ['update'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'bob-starts-vms' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vm-starter' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
      },
    });
    const allowed = await waitFor(() => putSubresource(bob, namespace, 'desk-1', 'start'), {
      describe: 'the Role takes effect',
      until: (answer) => answer.status !== 403,
    });
    expect(allowed.status).toBe(202);
    expect((await putSubresource(bob, namespace, 'desk-1', 'stop')).status).toBe(403);
  });

  it('runs a Manual VM through status.stateChangeRequests and keeps its run strategy', async () => {
    const { namespace, objects } = await setUp('manual');
    await objects.createVm(sampleVm('desk-1', { runStrategy: 'Manual' }));
    await waitFor(() => objects.getVm('desk-1'), {
      describe: 'the VM shows Stopped',
      until: (v) => v?.status?.printableStatus === 'Stopped',
    });
    expect(await objects.getVmi('desk-1')).toBeUndefined();

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);
    const vmi = await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI runs',
      until: (v) => v?.status?.phase === 'Running',
    });
    const vm = await waitFor(() => objects.getVm('desk-1'), {
      describe: 'the request is consumed',
      until: (v) => v?.status?.ready === true,
    });
    expect(vm?.spec.runStrategy).toBe('Manual');
    expect(vm?.status?.stateChangeRequests).toBeUndefined();

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'restart')).status).toBe(202);
    const restarted = await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'a new VMI runs',
      until: (v) => v?.status?.phase === 'Running' && v.metadata.uid !== vmi?.metadata.uid,
    });
    expect(restarted?.metadata.uid).not.toBe(vmi?.metadata.uid);

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop')).status).toBe(202);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is deleted',
      until: (v) => v === undefined,
    });
    expect((await objects.getVm('desk-1'))?.spec.runStrategy).toBe('Manual');
    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop')).body?.message).toContain(
      'VM is not running',
    );
  });

  it('flips the deprecated spec.running instead of a run strategy', async () => {
    const { namespace, objects } = await setUp('running');
    const vm = sampleVm('desk-1');
    delete vm.spec.runStrategy;
    vm.spec.running = false;
    await objects.createVm(vm);

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'start')).status).toBe(202);
    const started = await objects.getVm('desk-1');
    expect(started?.spec.running).toBe(true);
    expect(started?.spec.runStrategy).toBeUndefined();
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI runs',
      until: (v) => v?.status?.phase === 'Running',
    });

    expect((await putSubresource(cluster().kubeConfig, namespace, 'desk-1', 'stop')).status).toBe(202);
    expect((await objects.getVm('desk-1'))?.spec.running).toBe(false);
    await waitFor(() => objects.getVmi('desk-1'), {
      describe: 'the VMI is deleted',
      until: (v) => v === undefined,
    });
  });

  it('refuses a start for Always and a restart for Halted, as virt-api does', async () => {
    const { namespace, objects } = await setUp('refusals');
    await objects.createVm(sampleVm('halted'));
    const restart = await putSubresource(cluster().kubeConfig, namespace, 'halted', 'restart');
    expect(restart.status).toBe(409);
    expect(restart.body?.message).toContain('does not support manual restart requests');

    await objects.createVm(sampleVm('always', { runStrategy: 'Always' }));
    await waitFor(() => objects.getVmi('always'), {
      describe: 'the VMI runs',
      until: (v) => v?.status?.phase === 'Running',
    });
    expect(
      (await putSubresource(cluster().kubeConfig, namespace, 'always', 'start')).body?.message,
    ).toContain('VM is already running');
  });
});
