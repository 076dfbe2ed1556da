import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { createSimulatedNode } from '../../../src/testing/kubevirt/index.js';
import { useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe('the capacity helpers', () => {
  it('creates a Node whose status shows the allocatable resources, and updates it when called again', async () => {
    const { kubeConfig } = cluster();
    await createSimulatedNode(kubeConfig, {
      name: 'gpu-1',
      allocatable: { 'nvidia.com/A10': '2', cpu: '16' },
      labels: { zone: 'a' },
    });
    const updated = await createSimulatedNode(kubeConfig, {
      name: 'gpu-1',
      allocatable: { 'nvidia.com/A10': '4' },
    });
    expect(updated.status?.allocatable).toEqual({ 'nvidia.com/A10': '4' });

    const node = await kubeConfig.makeApiClient(CoreV1Api).readNode({ name: 'gpu-1' });
    expect(node.status?.allocatable).toEqual({ 'nvidia.com/A10': '4' });
    expect(node.status?.capacity).toEqual({ 'nvidia.com/A10': '4' });
    expect(node.status?.conditions?.find((condition) => condition.type === 'Ready')?.status).toBe('True');
    expect(node.metadata?.labels).toMatchObject({ 'kubernetes.io/hostname': 'gpu-1' });
  });

  it('refuses a node without a name', async () => {
    const error = await createSimulatedNode(cluster().kubeConfig, { name: ' ', allocatable: {} }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
  });
});
