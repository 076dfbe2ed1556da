// `npm run chaos -- --ops N --seed S [--processes P] [--lanes L] [--minutes M] [--history FILE]
// [--identities N] [--pool-size N] [--contest W]`: a longer storm on a control plane of its own; --history writes
// every call, change and Lease write as JSON lines for a closer look.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startLocalCluster } from '../../src/testing/local-cluster.js';
import { describeViolations, runStorm, summarizeStorm, tallyOutcomes } from './storm.js';

const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: '1000' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    processes: { type: 'string', default: '5' },
    lanes: { type: 'string', default: '3' },
    minutes: { type: 'string', default: '30' },
    history: { type: 'string' },
    identities: { type: 'string' },
    'pool-size': { type: 'string' },
    contest: { type: 'string', default: '0' },
  },
});
const count = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} takes a whole number of 1 or more, not ${text}`);
  return value;
};
const processes = count('processes', values.processes);
const ops = count('ops', values.ops);
// --identities N: N users, some with the characters a label cannot hold, as an outside storm has them
const identities =
  values.identities === undefined
    ? undefined
    : Array.from({ length: count('identities', values.identities) }, (_, index) =>
        index % 4 === 3 ? `user${index + 1}@github` : `u${index + 1}`,
      );
const poolSize =
  values['pool-size'] === undefined
    ? undefined
    : (() => {
        const max = count('pool-size', values['pool-size']);
        return { initial: Math.max(1, max - 2), max };
      })();
const contestWeight = Number(values.contest);
if (!Number.isFinite(contestWeight) || contestWeight < 0)
  throw new Error(`--contest takes a weight of 0 or more, not ${values.contest}`);

const cluster = await startLocalCluster({ auditLeaseWrites: true });
let exitCode = 1;
try {
  const report = await runStorm({
    cluster,
    seed: count('seed', values.seed),
    processes,
    lanes: count('lanes', values.lanes),
    // --ops is the whole storm's; each process runs its share.
    opsPerProcess: Math.ceil(ops / processes),
    durationMs: count('minutes', values.minutes) * 60_000,
    ...(identities ? { identities } : {}),
    ...(poolSize ? { poolSize } : {}),
    contestWeight,
    log: (line) => console.log(line),
  });
  if (values.history !== undefined) {
    const { calls, changes, leaseWrites } = report.history;
    writeFileSync(
      values.history,
      [...calls, ...changes, ...leaseWrites].map((record) => `${JSON.stringify(record)}\n`).join(''),
    );
  }
  if (report.violations.length > 0) console.log(describeViolations(report, 20));
  for (const found of report.unmadeClaims) console.log(`[${found.invariant}] ${found.message}`);
  for (const error of report.harnessErrors) console.log(`storm problem: ${error}`);
  console.log(tallyOutcomes(report));
  console.log(summarizeStorm(report));
  exitCode = report.violations.length === 0 && report.harnessErrors.length === 0 ? 0 : 1;
} finally {
  await cluster.stop();
}
process.exit(exitCode);
