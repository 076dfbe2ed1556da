import { ApiextensionsV1Api, type KubeConfig, Watch } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { rawRequest } from '../../../src/kube/raw-request.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { createPool } from '../../../src/pools/pool-service.js';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, usePrivateCluster, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';

const shared = useSharedCluster();
// KubeVirt v1.4 and earlier: clone.kubevirt.io in v1alpha1 alone; the clone CRD is cluster-wide, hence a plane of its own
const alphaOnly = usePrivateCluster({
  kubevirt: 'simulated',
  simulator: { cloneVersion: 'v1alpha1' },
  nodeAgent: false,
});

const golden: VirtualMachine = {
  metadata: { name: 'golden', labels: { app: 'desktop' } },
  spec: {
    runStrategy: 'Halted',
    template: {
      metadata: { labels: { app: 'desktop' } },
      spec: { domain: { memory: { guest: '128Mi' }, devices: {} } },
    },
  },
};

/**
 * Records, for every clone created in `namespace`, the API version its creator wrote it in: the entry of
 * `managedFields` that is not the status subresource's.
 */
async function recordCloneWrites(kubeConfig: KubeConfig, namespace: string, readVersion: string) {
  const written: string[] = [];
  const path = `/apis/clone.kubevirt.io/${readVersion}/namespaces/${namespace}/virtualmachineclones`;
  const watch = await new Watch(kubeConfig).watch(
    path,
    {},
    (type, clone: { metadata: { managedFields?: { apiVersion: string; subresource?: string }[] } }) => {
      if (type !== 'ADDED') return;
      const creator = clone.metadata.managedFields?.find((entry) => entry.subresource === undefined);
      if (creator) written.push(creator.apiVersion);
    },
    () => {},
  );
  return { written, stop: () => watch.abort() };
}

async function createPoolThrough(cluster: LocalClusterAccess, readVersion: string) {
  const namespace = await createTestNamespace(cluster, 'clone-version');
  const vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace, clock: createTestClock() });
  await vdi.context.cluster.createVm(namespace, golden);
  const writes = await recordCloneWrites(cluster.kubeConfig, namespace, readVersion);
  try {
    const created = await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 2 });
    await waitFor(() => writes.written.length === 2, { describe: 'the watch to see both clones' });
    return { created, written: writes.written, kube: vdi.context.cluster };
  } finally {
    writes.stop();
  }
}

describe('the clone API version a pool create uses', () => {
  it('is v1beta1 where the cluster serves it beside v1alpha1, as KubeVirt v1.5.0 and later do', async () => {
    const { created, written, kube } = await createPoolThrough(shared(), 'v1alpha1');
    expect(created.members).toEqual(['devpool-1', 'devpool-2']);
    expect(written).toEqual(['clone.kubevirt.io/v1beta1', 'clone.kubevirt.io/v1beta1']);
    expect(await kube.cloneApiVersion()).toBe('v1beta1');
    // discovered once for the adapter per API group (clones, and the golden VM's snapshot), not per clone call
    expect(kube.requestCounts.get('discover')).toBe(2);
  });

  it('is v1alpha1 where the cluster serves only that, as KubeVirt v1.4 and earlier did', async () => {
    const { created, written, kube } = await createPoolThrough(alphaOnly(), 'v1alpha1');
    expect(created.members).toEqual(['devpool-1', 'devpool-2']);
    expect(written).toEqual(['clone.kubevirt.io/v1alpha1', 'clone.kubevirt.io/v1alpha1']);
    expect(await kube.cloneApiVersion()).toBe('v1alpha1');
    expect(kube.requestCounts.get('discover')).toBe(2);
  });

  it("is none on a cluster without KubeVirt's clone API, where a pool create says so before making anything", async () => {
    const cluster = alphaOnly();
    await cluster.kubeConfig
      .makeApiClient(ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: 'virtualmachineclones.clone.kubevirt.io' });
    await waitFor(
      () =>
        rawRequest(cluster.kubeConfig, 'GET', '/apis/clone.kubevirt.io').then(
          () => false,
          () => true,
        ),
      { describe: 'the apiserver to stop serving clone.kubevirt.io' },
    );
    const namespace = await createTestNamespace(cluster, 'no-clone-api');
    const vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace, clock: createTestClock() });
    await vdi.context.cluster.createVm(namespace, golden);

    const refused = await failureOf(createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1 }));
    expect(refused.code).toBe('UNSUPPORTED_BACKEND');
    expect(refused.message).toMatch(
      /does not serve KubeVirt's clone API \(clone\.kubevirt\.io v1beta1 or v1alpha1\)/,
    );
    expect(await vdi.context.cluster.listVms(namespace, 'corral.dev/vdi-pool=devpool')).toEqual([]);
    expect(await vdi.context.cluster.resource(cloneKind).in(namespace).list()).toEqual([]);
  });
});
