import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { startNodeAgent } from '../../../src/testing/node-agent/node-agent.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, usePrivateCluster } from '../../support/cluster.js';
import { execInPod, samplePod } from './node-agent-support.js';

// The agent is started and stopped here by hand, as a kubelet that was down: the shared plane's must not interfere.
const cluster = usePrivateCluster({ kubevirt: 'none', nodeAgent: false });

describe('a node agent that starts after the fact', () => {
  it('runs a Pod bound while no agent ran and finishes a deletion begun meanwhile', async () => {
    const { kubeConfig, certificates } = cluster();
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const namespace = await createTestNamespace(cluster(), 'late-agent');
    // What a crash between binding and running leaves: a bound Pod without status.
    await core.createNamespacedPod({
      namespace,
      body: samplePod('bound-1', {}, { spec: { nodeName: 'sim-node-1' } }),
    });
    // What a crash between ending the processes and the final delete leaves: a bound Pod being deleted.
    await core.createNamespacedPod({
      namespace,
      body: samplePod('dying-1', {}, { spec: { nodeName: 'sim-node-1' } }),
    });
    await core.deleteNamespacedPod({ namespace, name: 'dying-1' });
    expect(
      (await core.readNamespacedPod({ namespace, name: 'dying-1' })).metadata?.deletionTimestamp,
    ).toBeDefined();

    const agent = await startNodeAgent({ kubeConfig, certificates });
    try {
      await waitFor(() => core.readNamespacedPod({ namespace, name: 'bound-1' }), {
        describe: 'bound-1 to be Ready',
        until: (pod) =>
          pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
      });
      const result = await execInPod(kubeConfig, namespace, 'bound-1', ['sh', '-c', 'echo $HOSTNAME']);
      expect(result.stdout).toBe('bound-1\n');
      await waitFor(
        () =>
          core.readNamespacedPod({ namespace, name: 'dying-1' }).then(
            () => false,
            (error: { code?: number }) => error.code === 404,
          ),
        { describe: 'dying-1 to be removed' },
      );
    } finally {
      await agent.stop();
    }
  });
});
