import { expect, it } from 'vitest';
import { useSharedCluster } from '../support/cluster.js';
import { describeViolations, runStorm, summarizeStorm, tallyOutcomes } from './storm.js';

const cluster = useSharedCluster();
// A fixed seed replays the same choices; CHAOS_SEED picks another storm (timing still differs run to run).
const seed = Number(process.env.CHAOS_SEED ?? 19);

it('keeps every claim invariant through a storm of three processes of two lanes on two pools', async () => {
  const report = await runStorm({
    cluster: cluster(),
    seed,
    processes: 3,
    lanes: 2,
    opsPerProcess: 400,
    // sized for the test command's budget; `npm run chaos` runs the long storm
    durationMs: 30_000,
    // a loaded machine makes fewer calls in 30 s (45 in a full run against 98 to 191 alone)
    minimum: { operations: 60, overrunMs: 60_000 },
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stderr.write(`${summarizeStorm(report)}\n${tallyOutcomes(report)}\n`);
  expect(report.harnessErrors, `the storm itself failed (seed ${seed})`).toEqual([]);
  expect(report.operations).toBeGreaterThan(50);
  expect(report.violations.length, describeViolations(report)).toBe(0);
});
