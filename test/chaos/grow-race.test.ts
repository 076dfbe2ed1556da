import { expect, it } from 'vitest';
import { KubeCluster } from '../../src/kube/cluster.js';
import { setSimulatorPaused } from '../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../src/testing/test-clock.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

// Found by the chaos storm (seed 5): two grows of one pool pick the same new member name; the one that finds the
// other's clone running fails, and its clean-up deleted that clone, so the other grow failed too. The loser now
// makes nothing for a name another call took, and fails in a way worth retrying.
it('leaves the clone of a concurrent grow alone when a grow loses the race for a member name', async () => {
  const namespace = await createTestNamespace(cluster(), 'grow-race');
  const { kubeConfig } = cluster();
  const kube = new KubeCluster(kubeConfig);
  const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
  await kube.createVm(namespace, stoppedVm('golden'));
  await vdi.createPool({ name: 'race', from: 'golden', size: 1 });

  // The simulator leaves clones alone, so the first grow stays in the middle of making race-2.
  await setSimulatorPaused(kubeConfig, namespace, true);
  const first = vdi.resizePool({ name: 'race', size: 2 }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  await waitFor(() => kube.getClone(namespace, 'race-2-clone'), {
    describe: 'the first grow to create race-2-clone',
  });

  await expect(vdi.resizePool({ name: 'race', size: 2 })).rejects.toMatchObject({
    code: 'CLONE_FAILED',
    retryable: true,
  });
  const survivor = await kube.getClone(namespace, 'race-2-clone');

  await setSimulatorPaused(kubeConfig, namespace, false);
  const outcome = await first;
  expect(survivor, 'the losing grow deleted the clone the first grow made').toBeDefined();
  expect(outcome).toMatchObject({ result: { added: ['race-2'] } });
});
