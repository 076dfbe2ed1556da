import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import { isConflictReason } from '../../src/kube/errors.js';
import type { LeaseObject } from '../../src/kube-objects.js';
import { startLocalCluster } from '../../src/testing/local-cluster.js';
import { createTestNamespace, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

function lease(name: string, holder: string): LeaseObject {
  const now = new Date().toISOString();
  return {
    metadata: { name },
    spec: { holderIdentity: holder, acquireTime: now, renewTime: now, leaseDurationSeconds: 3600 },
  };
}

function processesNaming(text: string): string {
  try {
    return execFileSync('pgrep', ['-af', text], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

describe('the local control plane is a real apiserver', () => {
  it('answers a second Lease create of the same name with 409 AlreadyExists', async () => {
    const namespace = await createTestNamespace(cluster(), 'lease-create');
    const kube = new KubeCluster(cluster().kubeConfig);
    await kube.createLease(namespace, lease('corral-vdi-devpool-1', 'alice'));
    const error = await kube
      .createLease(namespace, lease('corral-vdi-devpool-1', 'bob'))
      .catch((caught: unknown) => caught);
    expect(isConflictReason(error, 'AlreadyExists')).toBe(true);
  });

  it('answers a replace with a stale resourceVersion, and a delete with a stale precondition, with 409 Conflict', async () => {
    const namespace = await createTestNamespace(cluster(), 'lease-replace');
    const kube = new KubeCluster(cluster().kubeConfig);
    const first = await kube.createLease(namespace, lease('corral-vdi-devpool-1', 'alice'));
    const second = await kube.replaceLease(namespace, {
      ...first,
      spec: { ...first.spec, holderIdentity: 'bob' },
    });
    const stale = await kube
      .replaceLease(namespace, { ...first, spec: { ...first.spec, holderIdentity: 'carol' } })
      .catch((caught: unknown) => caught);
    expect(isConflictReason(stale, 'Conflict')).toBe(true);
    const staleDelete = await kube
      .deleteLease(namespace, 'corral-vdi-devpool-1', {
        uid: first.metadata.uid ?? '',
        resourceVersion: first.metadata.resourceVersion ?? '',
      })
      .catch((caught: unknown) => caught);
    expect(isVdiError(staleDelete, 'CONFLICT')).toBe(true);
    expect((await kube.getLease(namespace, 'corral-vdi-devpool-1'))?.spec.holderIdentity).toBe('bob');
    expect(second.metadata.resourceVersion).not.toBe(first.metadata.resourceVersion);
  });

  it('stops etcd, kube-apiserver and the simulator and removes its folder when stopped', async () => {
    const own = await startLocalCluster();
    const dataDir = dirname(own.kubeconfigPath);
    expect(processesNaming(dataDir)).toMatch(/kube-apiserver|etcd/);
    await own.stop();
    expect(processesNaming(dataDir)).toBe('');
    expect(existsSync(dataDir)).toBe(false);
    const unreachable = await new KubeCluster(own.kubeConfig, { retries: 0 })
      .listLeases('default')
      .catch((caught: unknown) => caught);
    expect(isVdiError(unreachable, 'CLUSTER_UNAVAILABLE')).toBe(true);
  });
});
