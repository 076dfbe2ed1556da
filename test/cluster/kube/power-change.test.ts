import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createNamespaceClock, simulatorAnnotations } from '../../../src/testing/kubevirt/index.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe("the kube adapter's start and stop", () => {
  it('does not take "already running" for a start while the instance of a stopped VM is still going down', async () => {
    const namespace = await createTestNamespace(cluster(), 'start-stopping');
    const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    const vm = stoppedVm('desk-1');
    vm.metadata.annotations = { [simulatorAnnotations.stopDelayMs]: '60000' };
    await kube.createVm(namespace, vm);
    expect(await kube.startVm(namespace, 'desk-1')).toBe('changed');
    await waitFor(() => kube.getVmi(namespace, 'desk-1'), {
      describe: 'the VMI of desk-1 to run',
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
    expect(await kube.stopVm(namespace, 'desk-1')).toBe('changed');
    await waitFor(() => kube.getVm(namespace, 'desk-1'), {
      describe: 'desk-1 to show Stopping',
      until: (found) => found?.status?.printableStatus === 'Stopping',
    });

    const early = await kube.startVm(namespace, 'desk-1').catch((error: unknown) => error);
    expect(isVdiError(early, 'CONFLICT')).toBe(true);
    expect((early as Error).message).toMatch(/still going down/);

    await clock.advance(60_000);
    await waitFor(() => kube.getVmi(namespace, 'desk-1'), {
      describe: 'the VMI of desk-1 to be gone',
      until: (vmi) => vmi === undefined,
    });
    expect(await kube.startVm(namespace, 'desk-1')).toBe('changed');
  });

  it('takes "already running" for a start of a VM that runs and is meant to', async () => {
    const namespace = await createTestNamespace(cluster(), 'start-running');
    const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
    await kube.createVm(namespace, stoppedVm('desk-1'));
    await kube.startVm(namespace, 'desk-1');
    await waitFor(() => kube.getVmi(namespace, 'desk-1'), {
      describe: 'the VMI of desk-1 to run',
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
    expect(await kube.startVm(namespace, 'desk-1')).toBe('already');
  });
});
