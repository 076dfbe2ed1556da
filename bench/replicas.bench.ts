// Broker replicas (`npm run bench`): claims/s through one and through three `broker serve --leader-elect`
// processes on fresh pools of the same local control plane, and the time until another replica holds the
// leader Lease after the leader is killed. Each claim is an HTTP request to a replica, round-robin, with the
// trusted login header; the brokers' own /metrics count their apiserver requests and lost Lease writes, and
// afterwards the claim Leases are read back to check one holder per member. Adds its
// figures to bench/results/latest.json under `replicas`. Sizes: BENCH_REPLICA_MEMBERS (200),
// BENCH_REPLICA_CONCURRENCY (50), BENCH_TAKEOVERS (3). Build first: npx tsup.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assignedToKey, leaseMemberLabel, poolLabel } from '../src/keys.js';
import { KubeCluster } from '../src/kube/cluster.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { waitFor } from '../src/testing/wait-for.js';
import {
  type BrokerProcess,
  killBrokerProcesses,
  readCounter,
  startBrokerProcess,
} from './support/broker-processes.js';
import { cpuMsOf, findApiserverPid, inParallel, sizeFromEnv } from './support/measure.js';
import { createNamespace, seedMembers } from './support/seed.js';

const members = sizeFromEnv('BENCH_REPLICA_MEMBERS', 200);
const concurrency = sizeFromEnv('BENCH_REPLICA_CONCURRENCY', 50);
const takeovers = sizeFromEnv('BENCH_TAKEOVERS', 3);
const pool = 'benchpool';
const leaderLease = 'corral-broker-leader';
const requestsCounter = 'corral_vdi_apiserver_requests_total';
const conflictsCounter = 'corral_vdi_lease_conflicts_total';
// short timings, so a takeover is seconds rather than the defaults' 13-17 s
const takeoverElection = [
  '--leader-lease-duration',
  '3s',
  '--leader-renew-deadline',
  '2s',
  '--leader-retry-period',
  '500ms',
];

/** One claim run: how many broker processes served it and what it cost. */
interface ClaimRun {
  replicas: number;
  claims: number;
  ms: number;
  claimsPerSecond: number;
  /** Apiserver requests and lost Lease writes (409) of every broker process together, per claim. */
  requestsPerClaim: number;
  leaseConflictsPerClaim: number;
  /** CPU of every broker process together, and of the kube-apiserver, per claim. */
  brokerCpuMsPerClaim: number;
  apiserverCpuMsPerClaim: number;
}

let cluster: LocalCluster | undefined;
let apiserverPid: number | undefined;
let namespaceCounter = 0;
const running: BrokerProcess[] = [];
const claimRuns: ClaimRun[] = [];
const takeoverMs: number[] = [];

function local(): LocalCluster {
  if (!cluster) throw new Error('the local cluster is not started');
  return cluster;
}

async function newNamespace(prefix: string): Promise<string> {
  namespaceCounter += 1;
  const name = `bench-${prefix}-${namespaceCounter}`;
  await createNamespace(local().kubeConfig, name);
  return name;
}

async function startReplicas(count: number, namespace: string, electionArgs: readonly string[] = []) {
  const started = await Promise.all(
    Array.from({ length: count }, () => startBrokerProcess(local().kubeconfigPath, namespace, electionArgs)),
  );
  running.push(...started);
  return started;
}

/** Waits until one of `replicas` holds the leader Lease of `namespace`, and returns that Lease. */
function waitForLeader(kube: KubeCluster, namespace: string, replicas: readonly BrokerProcess[]) {
  const identities = replicas.map((replica) => replica.identity);
  return waitFor(() => kube.getLease(namespace, leaderLease), {
    describe: `one of ${identities.join(', ')} to hold ${namespace}/${leaderLease}`,
    until: (lease) => identities.includes(lease?.spec.holderIdentity ?? ''),
  });
}

/** Claims a member for each of `claims` users through `replicas`' HTTP API, round-robin; the statuses not 200. */
async function claimThrough(replicas: readonly BrokerProcess[], namespace: string, claims: number) {
  const refused: string[] = [];
  await inParallel(claims, concurrency, async (index) => {
    const replica = replicas[index % replicas.length] as BrokerProcess;
    const response = await fetch(`${replica.url}/api/vdi/pools/vm/${namespace}/${pool}/claim`, {
      method: 'POST',
      headers: { 'x-forwarded-user': `user-${index + 1}@example.com`, 'content-type': 'application/json' },
      body: '{}',
    });
    const body = await response.text();
    if (response.status !== 200) refused.push(`user-${index + 1}: ${response.status} ${body.slice(0, 200)}`);
  });
  return refused;
}

/** Checks that every member has one claim Lease, every user one member, and each VM names its Lease's holder. */
async function expectOneHolderPerMember(kube: KubeCluster, namespace: string, claims: number) {
  const leases = await kube.listLeases(namespace, `${poolLabel}=${pool},${leaseMemberLabel}`);
  const holderOf = new Map(
    leases.map((lease) => [lease.metadata.labels?.[leaseMemberLabel], lease.spec.holderIdentity]),
  );
  expect(leases).toHaveLength(claims);
  expect(holderOf.size).toBe(claims);
  expect(new Set(holderOf.values()).size).toBe(claims);
  const vms = await kube.listVms(namespace, `${poolLabel}=${pool}`);
  const assigned = vms.filter((vm) => vm.metadata.annotations?.[assignedToKey] !== undefined);
  expect(assigned).toHaveLength(claims);
  for (const vm of assigned) {
    expect(vm.metadata.annotations?.[assignedToKey]).toBe(holderOf.get(vm.metadata.name));
  }
}

/** One claim run on a fresh pool of `claims` members behind `count` fresh broker processes. */
async function runClaims(count: number, claims: number): Promise<ClaimRun> {
  const namespace = await newNamespace(`replicas-${count}`);
  const kube = new KubeCluster(local().kubeConfig);
  await seedMembers(kube, namespace, pool, claims);
  const replicas = await startReplicas(count, namespace);
  await waitForLeader(kube, namespace, replicas);
  const brokerCpu = () => replicas.reduce((sum, replica) => sum + cpuMsOf(replica.child.pid), 0);
  const counted = async (name: string) =>
    (await Promise.all(replicas.map((replica) => readCounter(replica, name)))).reduce((sum, n) => sum + n, 0);
  const requestsBefore = await counted(requestsCounter);
  const conflictsBefore = await counted(conflictsCounter);
  const brokerCpuBefore = brokerCpu();
  const apiserverCpuBefore = cpuMsOf(apiserverPid);
  const started = performance.now();
  const refused = await claimThrough(replicas, namespace, claims);
  const ms = performance.now() - started;
  const cpu = {
    broker: brokerCpu() - brokerCpuBefore,
    apiserver: cpuMsOf(apiserverPid) - apiserverCpuBefore,
  };
  const run = {
    replicas: count,
    claims,
    ms,
    claimsPerSecond: (claims * 1000) / ms,
    requestsPerClaim: ((await counted(requestsCounter)) - requestsBefore) / claims,
    leaseConflictsPerClaim: ((await counted(conflictsCounter)) - conflictsBefore) / claims,
    brokerCpuMsPerClaim: cpu.broker / claims,
    apiserverCpuMsPerClaim: cpu.apiserver / claims,
  };
  await killBrokerProcesses(replicas);
  expect(refused).toEqual([]);
  await expectOneHolderPerMember(kube, namespace, claims);
  return run;
}

beforeAll(async () => {
  cluster = await startLocalCluster();
  apiserverPid = findApiserverPid(cluster.connection.dataDir);
  // a warm-up, so the first measured run does not pay for the apiserver's first requests
  await runClaims(1, 20);
}, 900_000);

afterEach(async () => {
  await killBrokerProcesses(running.splice(0));
});

afterAll(async () => {
  await killBrokerProcesses(running.splice(0));
  await cluster?.stop();
  if (claimRuns.length === 0 && takeoverMs.length === 0) return;
  const one = claimRuns.find((run) => run.replicas === 1);
  const three = claimRuns.find((run) => run.replicas === 3);
  const ratio = one && three ? three.claimsPerSecond / one.claimsPerSecond : null;
  const medianMs = median(takeoverMs);
  console.table(
    claimRuns.map((run) => ({
      replicas: run.replicas,
      claims: run.claims,
      'wall ms': Math.round(run.ms),
      'claims/s': round(run.claimsPerSecond),
      'requests/claim': round(run.requestsPerClaim),
      'Lease conflicts/claim': round(run.leaseConflictsPerClaim),
      'broker CPU ms/claim': round(run.brokerCpuMsPerClaim),
      'apiserver CPU ms/claim': round(run.apiserverCpuMsPerClaim),
    })),
  );
  if (ratio !== null) console.info(`claims/s through 3 replicas ÷ through 1: ${round(ratio)}`);
  if (takeoverMs.length > 0)
    console.info(
      `takeover after SIGKILL: ${takeoverMs.map(Math.round).join(', ')} ms; median ${medianMs} ms`,
    );
  const out = new URL('./results/', import.meta.url);
  mkdirSync(out, { recursive: true });
  const file = new URL('latest.json', out);
  // the claim path bench writes this file first in `npm run bench`: keep its figures beside these
  const earlier = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const replicas = {
    at: new Date().toISOString(),
    sizes: { members, concurrency, takeovers, takeoverElection: takeoverElection.join(' ') },
    claimRuns,
    claimsPerSecondRatio: ratio,
    takeoverMs,
    takeoverMedianMs: medianMs,
  };
  writeFileSync(file, `${JSON.stringify({ ...earlier, replicas }, null, 2)}\n`);
});

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const value =
    sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
  return Math.round(value ?? 0);
}

describe('broker replicas', () => {
  for (const count of [1, 3]) {
    it(`${members} claims through ${count} broker serve --leader-elect process(es), concurrency ${concurrency}`, async () => {
      claimRuns.push(await runClaims(count, members));
    });
  }

  it(`takeover after the leader of three is killed, ${takeovers} times (${takeoverElection.join(' ')})`, async () => {
    const kube = new KubeCluster(local().kubeConfig);
    for (let attempt = 1; attempt <= takeovers; attempt += 1) {
      const namespace = await newNamespace(`takeover-${attempt}`);
      const replicas = await startReplicas(3, namespace, takeoverElection);
      const held = await waitForLeader(kube, namespace, replicas);
      // one renewal seen, so the followers have watched the Lease as held before the kill
      await waitFor(() => kube.getLease(namespace, leaderLease), {
        describe: `the leader of ${namespace} to renew`,
        until: (lease) => lease?.spec.renewTime !== held?.spec.renewTime,
      });
      const leader = replicas.find(
        (replica) => replica.identity === held?.spec.holderIdentity,
      ) as BrokerProcess;
      leader.child.kill('SIGKILL');
      const killedAt = performance.now();
      const followers = replicas.filter((replica) => replica !== leader);
      await waitFor(() => kube.getLease(namespace, leaderLease), {
        describe: `a follower to hold ${namespace}/${leaderLease}`,
        until: (lease) => followers.some((replica) => replica.identity === lease?.spec.holderIdentity),
      });
      takeoverMs.push(performance.now() - killedAt);
      await killBrokerProcesses(replicas);
    }
    expect(takeoverMs).toHaveLength(takeovers);
  });
});
