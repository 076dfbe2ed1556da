import { describe, expect, it } from 'vitest';
import { setSimulatorPaused } from '../../src/testing/kubevirt/index.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createPoolMembers, createTestNamespace, usePrivateCluster } from '../support/cluster.js';
import { checkAtRest, prepareFaultRun } from './support/fault-run.js';

const cluster = usePrivateCluster();

describe('a claim storm while etcd pauses', () => {
  it('loses no claim and leaves no orphan or stuck member when etcd is paused for 5 s', async () => {
    const run = await prepareFaultRun(cluster(), 'etcd-pause');
    const client = run.startClient();
    await run.waitForCalls(client, 15, 'calls before the pause');
    await cluster().pauseEtcd(5000);
    await run.waitForCalls(client, 15, 'calls after the pause');
    await client.stop();

    const report = await checkAtRest(run, 'etcd paused 5 s', 1);
    expect(report.violations).toEqual([]);
    // calls were under way when etcd stopped: they waited it out rather than failing or hanging
    expect(report.figures.maxCallMs).toBeGreaterThan(4500);
  });

  // A defect the storm found, step by step: a claim took a member whose stop KubeVirt had not shown yet for
  // running, and left it to stop.
  it('hands a member claimed right after a release, before KubeVirt shows the stop, out only once it stopped, and starts it', async () => {
    const namespace = await createTestNamespace(cluster(), 'stale-running');
    await createPoolMembers(cluster(), namespace, 'alpha', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const kube = vdi.context.cluster;
    await vdi.claim({ pool: 'alpha', identity: 'ada@example.com' });
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: 'alpha-1 to show Running',
      until: (vm) => vm?.status?.printableStatus === 'Running',
    });
    // KubeVirt's controllers lag behind: the stop is accepted, the status still says Running
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    await vdi.release({ member: 'alpha-1', identity: 'ada@example.com' });
    // ada's guest still runs on it: refused as going down, retryable
    await expect(vdi.claim({ pool: 'alpha', identity: 'bob@example.com' })).rejects.toMatchObject({
      code: 'NO_FREE_MEMBER',
      retryable: true,
      details: { goingDown: 1 },
    });
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: 'alpha-1 to stop',
      until: (vm) => vm?.status?.printableStatus === 'Stopped',
    });
    const claimed = await vdi.claim({ pool: 'alpha', identity: 'bob@example.com' });

    expect(claimed.startError).toBeUndefined();
    await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
      describe: "bob's alpha-1 to run",
      timeoutMs: 10_000,
      until: (vm) => vm?.spec.runStrategy === 'Always' && vm.status?.printableStatus === 'Running',
    });
  });
});
