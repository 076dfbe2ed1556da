import { describe, expect, it } from 'vitest';
import { usePrivateCluster } from '../support/cluster.js';
import { callsPerPhase, checkAtRest, prepareFaultRun } from './support/fault-run.js';

const cluster = usePrivateCluster();

describe('a claim storm while the kube-apiserver restarts', () => {
  it('loses no claim and leaves no orphan or stuck member when the kube-apiserver is killed and started again', async () => {
    const run = await prepareFaultRun(cluster(), 'apiserver-restart');
    const client = run.startClient();
    await run.waitForCalls(client, callsPerPhase, 'calls before the restart');
    await cluster().restartApiserver();
    await run.waitForCalls(client, callsPerPhase, 'calls after the restart');
    await client.stop();

    const report = await checkAtRest(run, 'kube-apiserver restarted', 1);
    expect(report.violations).toEqual([]);
    // the storm met the outage: its requests were refused and tried again
    expect(report.figures.adapterRetries).toBeGreaterThan(0);
  });
});
