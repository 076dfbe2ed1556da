import { describe, expect, it } from 'vitest';
import { useSharedCluster } from '../support/cluster.js';
import type { StormEvent } from './support/claim-storm.js';
import { callsPerPhase, checkAtRest, prepareFaultRun } from './support/fault-run.js';

// The fault is the client's: the shared plane serves, in a namespace of the test's own.
const cluster = useSharedCluster();

// Calls a killed process began and never answered: each is a claim or release cut off half way.
function cutOff(events: StormEvent[]): StormEvent[] {
  const open = new Map<string, StormEvent>();
  for (const event of events) {
    if (event.type === 'summary') continue;
    const key = `${event.identity} ${event.pool}`;
    if (event.type === 'begin') open.set(key, event);
    else open.delete(key);
  }
  return [...open.values()];
}

describe('a claim storm whose client process is killed', () => {
  it('loses no claim and leaves no orphan or stuck member when the client is killed mid-claim three times and restarted', async () => {
    const run = await prepareFaultRun(cluster(), 'client-kill');
    let client = run.startClient();
    let claimsCutOff = 0;
    for (let kill = 0; kill < 3; kill += 1) {
      const from = run.events.length;
      await run.waitForCalls(client, callsPerPhase, 'calls before the kill');
      await client.next('a claim to begin', (event) => event.type === 'begin' && event.op === 'claim');
      await client.kill();
      const unanswered = cutOff(run.events.slice(from));
      claimsCutOff += unanswered.filter((event) => event.type === 'begin' && event.op === 'claim').length;
      // the next process starts with nothing in hand but the cluster, as a restarted client does
      client = run.startClient();
    }
    await run.waitForCalls(client, callsPerPhase, 'calls after the last restart');
    await client.stop();

    const report = await checkAtRest(run, 'client killed mid-claim', 3);
    expect(report.violations).toEqual([]);
    expect(claimsCutOff).toBeGreaterThan(0);
  });
});
