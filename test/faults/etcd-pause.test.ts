import { describe, expect, it } from 'vitest';
import { usePrivateCluster } from '../support/cluster.js';
import { callsPerPhase, checkAtRest, prepareFaultRun } from './support/fault-run.js';

// virt-controller loses its leader Lease in the freeze and exits; the test kit starts it again (docs/testing.md)
const cluster = usePrivateCluster();

describe('a claim storm while etcd pauses', () => {
  it('loses no claim and leaves no orphan or stuck member when etcd is paused for 5 s', async () => {
    const run = await prepareFaultRun(cluster(), 'etcd-pause');
    const client = run.startClient();
    await run.waitForCalls(client, callsPerPhase, 'calls before the pause');
    await cluster().pauseEtcd(5000);
    await run.waitForCalls(client, callsPerPhase, 'calls after the pause');
    await client.stop();

    const report = await checkAtRest(run, 'etcd paused 5 s', 1);
    expect(report.violations).toEqual([]);
    // calls were under way when etcd stopped: they waited it out rather than failing or hanging
    expect(report.figures.maxCallMs).toBeGreaterThan(4500);
  });
});
