import { expect, it } from 'vitest';
import { useSharedCluster } from '../support/cluster.js';
import type { Violation } from './history.js';
import { describeViolations, runStorm, summarizeStorm } from './storm.js';

const cluster = useSharedCluster();
// A fixed seed replays the same choices; CHAOS_SEED picks another storm (timing still differs run to run).
const seed = Number(process.env.CHAOS_SEED ?? 19);

// Rarer windows under the same invariants as the fixed defects are still open, written up in docs/testing.md
// ("Still open"), and reported apart (printed, not failed): a free member still showing a holder (a window
// docs/claims.md names), and a claim left on a member that does not exist.
function isOpenDefect(violation: Violation): boolean {
  return (
    violation.invariant === 'presentation-at-rest' &&
    (violation.message.includes('its Lease names nobody') ||
      violation.message.includes('but the member does not exist'))
  );
}

it('keeps every claim invariant through a storm of three processes on two pools', async () => {
  const report = await runStorm({
    kubeConfig: cluster().kubeConfig,
    kubeconfigPath: cluster().kubeconfigPath,
    seed,
    processes: 3,
    opsPerProcess: 400,
    durationMs: 120_000,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stderr.write(`${summarizeStorm(report)}\n`);
  expect(report.harnessErrors, `the storm itself failed (seed ${seed})`).toEqual([]);
  expect(report.operations).toBeGreaterThan(50);
  const openDefects = report.violations.filter(isOpenDefect);
  process.stderr.write(`chaos: ${openDefects.length} violation(s) of the open windows, reported apart\n`);
  for (const violation of openDefects)
    process.stderr.write(`  [${violation.invariant}] ${violation.message}\n`);
  const others = { ...report, violations: report.violations.filter((violation) => !isOpenDefect(violation)) };
  expect(others.violations.length, describeViolations(others)).toBe(0);
});
