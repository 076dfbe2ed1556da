import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { createReadyPod, execInPod, samplePod } from './node-agent-support.js';

const cluster = useSharedCluster();

describe('the node agent', () => {
  it('runs a Pod and reads its name back through exec in the apiserver', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    const pod = await createReadyPod(kubeConfig, namespace, samplePod('echo-1'));
    expect(pod.status?.phase).toBe('Running');
    const result = await execInPod(kubeConfig, namespace, 'echo-1', ['sh', '-c', 'echo $HOSTNAME']);
    expect(result.stdout).toBe('echo-1\n');
    expect(result.status?.status).toBe('Success');
    const core = kubeConfig.makeApiClient(CoreV1Api);
    expect(core).toBeDefined();
  });
});
