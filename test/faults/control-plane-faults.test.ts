import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { LeaseObject } from '../../src/kube-objects.js';
import { createTestNamespace, usePrivateCluster } from '../support/cluster.js';

const cluster = usePrivateCluster({ kubevirt: 'none' });

function lease(name: string): LeaseObject {
  const now = new Date().toISOString();
  return {
    metadata: { name },
    spec: { holderIdentity: 'alice', acquireTime: now, renewTime: now, leaseDurationSeconds: 3600 },
  };
}

function apiserverPid(): string {
  const dataDir = dirname(cluster().kubeconfigPath);
  const lines = execFileSync('pgrep', ['-af', dataDir], { encoding: 'utf8' }).trim().split('\n');
  const line = lines.find((candidate) => / \S*kube-apiserver /.test(candidate));
  if (!line) throw new Error(`no kube-apiserver among: ${lines.join('; ')}`);
  return line.split(' ')[0] ?? '';
}

describe('the local control plane can be broken on purpose', () => {
  it('restarts the kube-apiserver as a new process on the same address, keeping what etcd holds, and again', async () => {
    const namespace = await createTestNamespace(cluster(), 'restart');
    const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
    await kube.createLease(namespace, lease('before-restart'));
    const pids = [apiserverPid()];

    await cluster().restartApiserver();
    pids.push(apiserverPid());
    expect((await kube.getLease(namespace, 'before-restart'))?.spec.holderIdentity).toBe('alice');
    await kube.createLease(namespace, lease('after-restart'));

    // the second restart kills the process the first one started
    await cluster().restartApiserver();
    pids.push(apiserverPid());
    expect(new Set(pids).size).toBe(3);
    expect((await kube.getLease(namespace, 'after-restart'))?.spec.holderIdentity).toBe('alice');
  });

  it('holds writes while etcd is paused and lets them through once it is continued', async () => {
    const namespace = await createTestNamespace(cluster(), 'pause');
    const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
    const order: string[] = [];
    const paused = cluster()
      .pauseEtcd(1500)
      .then(() => order.push('etcd continued'));
    const written = kube
      .createLease(namespace, lease('during-pause'))
      .then(() => order.push('lease written'));
    await Promise.all([paused, written]);
    expect(order).toEqual(['etcd continued', 'lease written']);
  });

  it('refuses a negative pause, and a second pause while etcd is paused, with INVALID_INPUT', async () => {
    const negative = await cluster()
      .pauseEtcd(-1)
      .catch((error: unknown) => error);
    expect(isVdiError(negative, 'INVALID_INPUT')).toBe(true);
    const first = cluster().pauseEtcd(200);
    const second = await cluster()
      .pauseEtcd(200)
      .catch((error: unknown) => error);
    await first;
    expect(isVdiError(second, 'INVALID_INPUT')).toBe(true);
  });
});
