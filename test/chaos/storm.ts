import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api } from '@kubernetes/client-node';
import { isVdiError } from '../../src/errors.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachine } from '../../src/kubevirt-types.js';
import { releaseStalledAfterMs } from '../../src/sessions/plan-reclaim-pass.js';
import { simulatorAnnotations } from '../../src/testing/kubevirt/fault-knobs.js';
import { createNamespaceClock } from '../../src/testing/kubevirt/namespace-clock.js';
import type { LocalClusterAccess } from '../../src/testing/local-cluster.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { checkHistory, findUnmadeClaims, sliceHistory } from './check-history.js';
import type { DriverConfig, DriverLine, StormPool } from './driver-protocol.js';
import type { CallRecord, History, LaneUser, RestState, Violation } from './history.js';
import { readLeaseWrites } from './lease-audit.js';
import { derivedSeed } from './prng.js';
import { leaseChangeOf, recordChanges, vmChangeOf } from './record-changes.js';
import { advanceSharedClock, followSharedClock } from './shared-clock.js';
import type { WatchedObject } from './watch-path.js';

/** Options of {@link runStorm}. */
export interface StormOptions {
  /** A cluster that audits Lease writes (`startLocalCluster({ auditLeaseWrites: true })`). */
  cluster: LocalClusterAccess;
  seed: number;
  processes: number;
  /** Loops of calls each process runs at once, each as a user of its own. */
  lanes: number;
  opsPerProcess: number;
  /** No driver starts an operation after this many milliseconds of storm, once the storm has its minimum. */
  durationMs: number;
  /**
   * Operations the storm runs even past `durationMs` on a slow machine, at most `overrunMs` longer: a loaded
   * machine makes fewer calls in the same time, and a storm of too few proves little. @defaultValue none
   */
  minimum?: { operations: number; overrunMs: number };
  /** Identities the lanes share. @defaultValue five short names */
  identities?: readonly string[];
  /** Members each pool starts with, and the most a grow makes it. @defaultValue 3 and 5 */
  poolSize?: { initial: number; max: number };
  /** How often a contest (a claim, then its release, an admin's unassign and two claims at once, and in every other one a shrink) is chosen; 0 leaves it out. */
  contestWeight?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/** What a storm did and found. */
export interface StormReport {
  seed: number;
  namespace: string;
  processes: number;
  lanes: number;
  /** Operations the drivers ran (a double-click is one operation of two calls). */
  operations: number;
  calls: number;
  failedCalls: number;
  changes: number;
  violations: Violation[];
  /** Claims no call made or ended, as an outside reader of the Leases and VMs sees them: see {@link findUnmadeClaims}. */
  unmadeClaims: Violation[];
  history: History;
  /** Problems of the storm itself (a driver that died, a watch that broke): its history cannot be judged. */
  harnessErrors: string[];
  elapsedMs: number;
}

const pools: StormPool[] = [
  { name: 'alpha', ephemeral: false, slowStop: true },
  { name: 'beta', ephemeral: true, slowStop: false },
];
const defaultIdentities = ['ana', 'bo', 'cy', 'di', 'ed'];
const admin = 'admin@example.com';
const defaultPoolSize = { initial: 3, max: 5 };
// Shared time a slow guest takes to stop; the drivers' ticks move the clock 5–15 s at a time.
const slowStopMs = 20_000;

const driverPath = resolve(import.meta.dirname, 'driver.ts');
const resolveHooksPath = resolve(import.meta.dirname, 'resolve-ts.mjs');

/** The error codes `docs/errors.md` lists. */
function readDocumentedCodes(): string[] {
  const page = readFileSync(resolve(import.meta.dirname, '../../docs/errors.md'), 'utf8');
  return [...page.matchAll(/^\| `([A-Z_]+)`/gm)].map((match) => match[1] ?? '');
}

function goldenVm(name: string): VirtualMachine {
  return {
    metadata: { name, labels: {} },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
    },
  };
}

interface DriverRun {
  lines: DriverLine[];
  stderr: string;
  exitCode: number | null;
}

function runDriver(config: DriverConfig, onLine: (line: DriverLine) => void): Promise<DriverRun> {
  const child = spawn(
    process.execPath,
    [
      '--experimental-transform-types',
      '--no-warnings',
      '--import',
      resolveHooksPath,
      driverPath,
      JSON.stringify(config),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: DriverLine[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  createInterface({ input: child.stdout }).on('line', (text) => {
    const line = JSON.parse(text) as DriverLine;
    lines.push(line);
    onLine(line);
  });
  return new Promise((done) => {
    child.on('close', (exitCode) => done({ lines, stderr, exitCode }));
  });
}

/** Formats a storm's violations with the seed and the history around each, for a failure message. */
export function describeViolations(report: StormReport, limit = 5): string {
  const parts = [
    `chaos storm seed ${report.seed} (namespace ${report.namespace}): ${report.violations.length} violation(s); replay with npm run chaos -- --seed ${report.seed}`,
  ];
  for (const violation of report.violations.slice(0, limit)) {
    parts.push(`\n[${violation.invariant}] ${violation.message}`);
    for (const record of sliceHistory(report.history, violation)) parts.push(`  ${JSON.stringify(record)}`);
  }
  if (report.violations.length > limit) parts.push(`\n… and ${report.violations.length - limit} more`);
  return parts.join('\n');
}

/** The figures of a storm in one line. */
export function summarizeStorm(report: StormReport): string {
  const byInvariant = new Map<string, number>();
  for (const violation of report.violations)
    byInvariant.set(violation.invariant, (byInvariant.get(violation.invariant) ?? 0) + 1);
  const kinds = [...byInvariant].map(([name, count]) => `${name} ${count}`).join(', ');
  const found = (invariant: string) =>
    report.unmadeClaims.filter((unmade) => unmade.invariant === invariant).length;
  return `chaos: seed ${report.seed}, ${report.processes} processes × ${report.lanes} lanes, ${report.operations} operations (${report.calls} calls, ${report.failedCalls} failed), ${report.changes} changes watched, ${report.violations.length} violations${kinds ? ` (${kinds})` : ''}, ${found('claim-given-back')} claims given back by their own call, ${found('take-given-back')} takes given back that were never a claim, ${found('copy-before-pass')} copies without a Lease before the pass, ${Math.round(report.elapsedMs / 1000)} s`;
}

/** How each kind of call ended and how long it took: `claim: ok 120 (slowest 2.1 s), NO_FREE_MEMBER 30 (…)`. */
export function tallyOutcomes(report: StormReport): string {
  const tally = new Map<string, Map<string, { count: number; slowestMs: number }>>();
  for (const call of report.history.calls) {
    const outcome = call.outcome.ok ? 'ok' : (call.outcome.error.code ?? call.outcome.error.name);
    const outcomes = tally.get(call.op) ?? new Map<string, { count: number; slowestMs: number }>();
    const seen = outcomes.get(outcome) ?? { count: 0, slowestMs: 0 };
    outcomes.set(outcome, {
      count: seen.count + 1,
      slowestMs: Math.max(seen.slowestMs, call.endedAt - call.startedAt),
    });
    tally.set(call.op, outcomes);
  }
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [...tally]
    .map(
      ([op, outcomes]) =>
        `${op}: ${[...outcomes].map(([outcome, seen]) => `${outcome} ${seen.count} (slowest ${seconds(seen.slowestMs)})`).join(', ')}`,
    )
    .join('\n');
}

/**
 * Runs a storm: two pools in a fresh namespace with a shared clock, `processes` driver processes making
 * random calls, watches recording every Lease, VM and VMI change; then one engine pass, a look at the rest
 * state, and the invariants checked over the whole history.
 */
export async function runStorm(options: StormOptions): Promise<StormReport> {
  const { cluster, seed, log = () => {} } = options;
  const identities = [...(options.identities ?? defaultIdentities)];
  const { initial: initialSize, max: maxPoolSize } = options.poolSize ?? defaultPoolSize;
  const auditLogPath = cluster.connection.leaseAuditLogPath;
  if (auditLogPath === undefined)
    throw new Error(
      'the storm tells who wrote each claim from the audit: start the cluster with auditLeaseWrites',
    );
  const { kubeConfig } = cluster;
  const began = Date.now();
  const namespace = `chaos-${seed}-${began.toString(36)}`;
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  await createNamespaceClock(kubeConfig, namespace);
  const harnessErrors: string[] = [];
  const recorder = recordChanges(kubeConfig, namespace);
  const clock = followSharedClock(kubeConfig, namespace, (error) =>
    harnessErrors.push(`clock watch: ${String(error)}`),
  );
  try {
    await Promise.all([recorder.ready, clock.ready]);
    await waitFor(() => clock.now(), { describe: `the shared clock of ${namespace}` });
    // the storm's own writes (set-up, the engine pass) are audited as a lane of their own, process -1
    const laneUsers: LaneUser[] = [{ user: 'chaos-storm', proc: -1, lane: 0 }];
    const stormConfig = cluster.userKubeConfig('chaos-storm', ['system:masters']);
    const vdi = createVdi({ kubeConfig: stormConfig, namespace, clock });
    const kube = new KubeCluster(stormConfig);
    await kube.createVm(namespace, goldenVm('golden'));
    for (const pool of pools) {
      const made = await vdi.createPool({
        name: pool.name,
        from: 'golden',
        size: initialSize,
        ephemeral: pool.ephemeral,
      });
      if (pool.slowStop)
        for (const member of made.members)
          await kube.patchVm(namespace, member, {
            metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: String(slowStopMs) } },
          });
    }
    log(
      `chaos: seed ${seed}, namespace ${namespace}, ${options.processes} processes × ${options.lanes} lanes, ${options.opsPerProcess} operations a process`,
    );

    const deadline = Date.now() + options.durationMs;
    const calls: CallRecord[] = [];
    let operations = 0;
    const keeper = keepSharedClockMoving(kubeConfig, namespace, clock, (error) =>
      harnessErrors.push(`clock keeper: ${String(error)}`),
    );
    const runs = await Promise.all(
      Array.from({ length: options.processes }, (_, proc) =>
        runDriver(
          {
            proc,
            seed: derivedSeed(seed, proc),
            ops: options.opsPerProcess,
            deadline,
            minOps: Math.ceil((options.minimum?.operations ?? 0) / options.processes),
            finalDeadline: deadline + (options.minimum?.overrunMs ?? 0),
            kubeconfigPath: cluster.kubeconfigPath,
            lanes: Array.from({ length: options.lanes }, (_, lane) => {
              const user = `chaos-${proc}-${lane}`;
              laneUsers.push({ user, proc, lane });
              return { user, kubeconfigPath: cluster.userKubeconfigPath(user, ['system:masters']) };
            }),
            namespace,
            golden: 'golden',
            pools,
            identities,
            admin,
            maxPoolSize,
            slowStopMs,
            ...(options.contestWeight ? { contestWeight: options.contestWeight } : {}),
          },
          (line) => {
            if (line.kind === 'call') calls.push(line);
            else if (line.kind === 'done') operations += line.ops;
            else harnessErrors.push(`driver ${line.proc}: ${line.message}`);
          },
        ),
      ),
    );
    for (const [proc, run] of runs.entries())
      if (run.exitCode !== 0)
        harnessErrors.push(`driver ${proc} exited ${run.exitCode}: ${run.stderr.trim()}`);
    keeper.stop();
    log(`chaos: drivers done, ${operations} operations, ${calls.length} calls`);

    // At rest: slow guests finish stopping, one engine pass runs, and every change so far has been received. The
    // pass is judged a stalled-release bound later, so it finishes any release that failed half way and removes the
    // copies claims left behind (as the docs say the next pass does), as a settled cluster would have.
    const restNow = await advanceSharedClock(kubeConfig, namespace, slowStopMs * 2 + releaseStalledAfterMs);
    await waitFor(() => clock.now(), {
      describe: 'the shared clock to reach the rest time',
      until: (now) => now.getTime() >= restNow,
    });
    await waitFor(() => kube.listVms(namespace), {
      describe: 'every slow guest to finish stopping',
      until: (vms) => vms.every((vm) => vm.status?.printableStatus !== 'Stopping'),
    });
    // what a cluster without a broker's pass would show at rest
    const [leasesBeforePass, vmsBeforePass] = await Promise.all([
      kube.listLeases(namespace),
      kube.listVms(namespace),
    ]);
    const restBeforePass = restStateOf(leasesBeforePass, vmsBeforePass, Date.now(), clock.now().getTime());
    // with the watch caches, as `broker serve` runs it: the pass then always looks at the members' copies
    vdi.startCaches([namespace]);
    await vdi.waitForCacheSync();
    const engine = vdi.createSessionEngine({ namespaces: [namespace] });
    const passStarted = Date.now();
    const pass = await engine.runPass().finally(() => vdi.stopCaches());
    calls.push({
      kind: 'call',
      proc: -1,
      lane: 0,
      seq: 0,
      op: 'engine-pass',
      startedAt: passStarted,
      endedAt: Date.now(),
      outcome:
        pass.errors.length === 0 ? { ok: true } : { ok: false, error: describePassErrors(pass.errors) },
    });
    const marker = `chaos-rest-${began.toString(36)}`;
    await kube.createLease(namespace, { metadata: { name: marker }, spec: {} });
    await waitFor(
      () => recorder.changes.some((change) => change.kind === 'lease' && change.name === marker),
      {
        describe: 'the Lease watch to catch up with the rest state',
      },
    );
    // the apiserver logs each write as it ends: once the marker's is there, so is every earlier one
    const leaseWrites = await waitFor(() => readLeaseWrites(auditLogPath, namespace), {
      describe: 'the audit of the rest marker',
      until: (writes) => writes.some((write) => write.name === marker),
    });
    const restAt = Date.now();
    const [leases, vms] = await Promise.all([kube.listLeases(namespace), kube.listVms(namespace)]);
    const history: History = {
      calls,
      changes: recorder.changes.filter((change) => change.name !== marker),
      leaseWrites,
      laneUsers,
      rest: restStateOf(
        leases.filter((lease) => lease.metadata.name !== marker),
        vms,
        restAt,
        clock.now().getTime(),
      ),
      restBeforePass,
      documentedCodes: readDocumentedCodes(),
    };
    harnessErrors.push(...recorder.errors);
    return {
      seed,
      namespace,
      processes: options.processes,
      lanes: options.lanes,
      operations,
      calls: calls.length,
      failedCalls: calls.filter((call) => !call.outcome.ok).length,
      changes: history.changes.length,
      violations: checkHistory(history),
      unmadeClaims: findUnmadeClaims(history),
      history,
      harnessErrors,
      elapsedMs: Date.now() - began,
    };
  } finally {
    recorder.stop();
    clock.stop();
  }
}

// How long the shared clock may stand still while drivers run before the storm moves it itself, and by how much.
const clockStillMs = 5_000;

/**
 * Moves the shared clock on whenever it stood still for {@link clockStillMs} while the drivers run. Only the drivers'
 * ticks move it otherwise, and a call waiting on shared time (a shrink waiting for a slow guest to stop, whose delay
 * and whose wait are both measured on it) would wait forever once the other lanes are done.
 */
function keepSharedClockMoving(
  kubeConfig: LocalClusterAccess['kubeConfig'],
  namespace: string,
  clock: { now(): Date },
  onError: (error: unknown) => void,
): { stop(): void } {
  let seen = clock.now().getTime();
  const timer = setInterval(() => {
    const now = clock.now().getTime();
    if (now !== seen) {
      seen = now;
      return;
    }
    advanceSharedClock(kubeConfig, namespace, clockStillMs).catch(onError);
  }, clockStillMs);
  return { stop: () => clearInterval(timer) };
}

function restStateOf(leases: unknown[], vms: VirtualMachine[], at: number, now: number): RestState {
  return {
    leases: leases.map((lease) => leaseChangeOf('ADDED', lease as WatchedObject, at)),
    vms: vms
      .filter((vm) => vm.metadata.name !== 'golden')
      .map((vm) => vmChangeOf('ADDED', vm as unknown as WatchedObject, at)),
    now,
  };
}

function describePassErrors(errors: readonly unknown[]) {
  const first = errors[0];
  return isVdiError(first)
    ? {
        name: first.name,
        code: first.code,
        message: `${errors.length} pass error(s), first: ${first.message}`,
      }
    : { name: 'Error', message: `${errors.length} pass error(s), first: ${String(first)}` };
}
