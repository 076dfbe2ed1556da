import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isLeaseExpired } from '../../../src/claims/claim-liveness.js';
import { isReleasing } from '../../../src/claims/releasing-mark.js';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { leaseNamePrefix, leasePoolLabel, sessionIdAnnotation } from '../../../src/keys.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { releaseStalledAfterMs } from '../../../src/sessions/plan-reclaim-pass.js';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace } from '../../support/cluster.js';
import type { StormEvent } from './claim-storm.js';
import { type StormProcess, type StormProcessConfig, startStormProcess } from './storm-client.js';

/**
 * The longest one SDK call may take in a storm. A release during an apiserver restart was seen to take 29 s (its
 * requests wait on the starting apiserver, then retry); the apiserver's own request timeout is the bound.
 */
export const callBoundMs = 60_000;

/**
 * How many calls a storm runs before and after each fault: a few in the test command, more in `npm run faults`,
 * which sets `FAULT_CALLS`.
 */
export const callsPerPhase = readCallsPerPhase(process.env.FAULT_CALLS ?? '6');

function readCallsPerPhase(text: string): number {
  const calls = Number(text);
  if (!Number.isInteger(calls) || calls < 1)
    throw new Error(`FAULT_CALLS takes a whole number of 1 or more, not ${text}`);
  return calls;
}

const documentedCodes = new Set(
  readFileSync(resolve(import.meta.dirname, '../../../docs/errors.md'), 'utf8')
    .split('\n')
    .flatMap((line) => /^\| `([A-Z_]+)`/.exec(line)?.[1] ?? []),
);

/** A storm's ground: a namespace with two pools, the identities that storm them, and every event recorded. */
export interface FaultRun {
  namespace: string;
  vdi: Vdi;
  /** The clock of `vdi`, which the engine pass judges by. */
  clock: TestClock;
  events: StormEvent[];
  config: StormProcessConfig;
  /** Starts a client process storming the pools; several may run one after another. */
  startClient(): StormProcess;
  /** Waits until `count` more calls have ended, so a fault lands in a storm under way. */
  waitForCalls(client: StormProcess, count: number, describe: string): Promise<void>;
}

/** Sets up two pools of three members and five identities, seeded from `FAULT_SEED` or at random. */
export async function prepareFaultRun(cluster: LocalClusterAccess, name: string): Promise<FaultRun> {
  const namespace = await createTestNamespace(cluster, name);
  const pools = ['alpha', 'beta'];
  await Promise.all(pools.map((pool) => createPoolMembers(cluster, namespace, pool, 3)));
  const seed = Number(process.env.FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(
    `${name}: seed ${seed} (FAULT_SEED=${seed} repeats each identity's choices), ${callsPerPhase} calls a phase`,
  );
  const config: StormProcessConfig = {
    kubeconfigPath: cluster.kubeconfigPath,
    namespace,
    pools,
    identities: ['ada', 'bob', 'cy', 'dee', 'eve'].map((user) => `${user}@example.com`),
    seed,
    boundMs: callBoundMs,
  };
  const events: StormEvent[] = [];
  let clients = 0;
  // the pass's clock is injected, at the time the storm's Leases were written around
  const clock = createTestClock(new Date());
  return {
    namespace,
    vdi: createVdi({ kubeConfig: cluster.kubeConfig, namespace, clock }),
    clock,
    events,
    config,
    startClient() {
      clients += 1;
      return startStormProcess({ ...config, seed: config.seed + 1000 * (clients - 1) }, (event) =>
        events.push(event),
      );
    },
    async waitForCalls(client, count, describe) {
      for (let ended = 0; ended < count; ended += 1) {
        await client.next(`${describe} (${ended} of ${count} so far)`, (event) => event.type === 'end');
      }
    },
  };
}

/** What a fault run measured. */
export interface FaultFigures {
  operations: number;
  failedCalls: number;
  faultsSurvived: number;
  /** Calls the storm made again after a retryable error. */
  callerRetries: number;
  /** Requests the adapter sent again after a transient failure, in every client process that finished. */
  adapterRetries: number;
  maxCallMs: number;
  /** The call that took `maxCallMs`, and how it ended. */
  slowestCall: string;
  errorsByCode: Record<string, number>;
  claimantLeasesLeft: number;
  /** Releases a killed client left marked releasing, finished by the engine pass (docs/sessions.md). */
  releasesFinishedByPass: number;
}

/** What the checks found: each violation in words, and the figures. */
export interface FaultReport {
  violations: string[];
  figures: FaultFigures;
}

type Expected =
  | { kind: 'free' }
  | { kind: 'held'; member: string; sessionId: string }
  /** `cutOff`: the release began and its process was killed before it answered. */
  | { kind: 'releasing'; member: string; cutOff: boolean };

const lostCodes = ['CLAIM_ENDED', 'NOT_HOLDER', 'CLAIM_EXPIRED', 'CLAIM_CHANGED'];

// Replays each identity's answers in order: what it was told it holds, and any answer that contradicts that.
function replayAnswers(events: StormEvent[], violations: string[]): Map<string, Expected> {
  const expected = new Map<string, Expected>();
  for (const event of events) {
    if (event.type === 'summary') continue;
    const key = `${event.identity} ${event.pool}`;
    const before = expected.get(key) ?? { kind: 'free' };
    if (event.type === 'begin') {
      // a release asked for, even by a process killed before the answer, is the holder's own
      if (event.op === 'release' && before.kind === 'held') {
        expected.set(key, { kind: 'releasing', member: before.member, cutOff: true });
      }
      continue;
    }
    const code = event.error?.code;
    if (event.op === 'claim' && event.member && event.sessionId) {
      if (
        before.kind === 'held' &&
        (before.member !== event.member || before.sessionId !== event.sessionId)
      ) {
        violations.push(
          `lost claim: ${key} was told ${before.member} (session ${before.sessionId}), then a claim answered ${event.member} (session ${event.sessionId})`,
        );
      }
      expected.set(key, { kind: 'held', member: event.member, sessionId: event.sessionId });
    } else if (event.op === 'claim' && code === 'NO_FREE_MEMBER' && before.kind === 'held') {
      violations.push(`lost claim: ${key} held ${before.member}, then a claim answered NO_FREE_MEMBER`);
    } else if (event.op === 'release') {
      const ended = !event.error || code === 'CLAIM_ENDED' || code === 'NOT_HOLDER';
      expected.set(
        key,
        ended ? { kind: 'free' } : { kind: 'releasing', member: event.member ?? '', cutOff: false },
      );
    } else if (before.kind === 'held' && code && lostCodes.includes(code)) {
      violations.push(`lost claim: ${key} held ${before.member}, then ${event.op} answered ${code}`);
    }
  }
  return expected;
}

// An answer that is the storm's ordinary business, not an outage: a full pool, a release found done.
function isOrdinaryAnswer(event: Extract<StormEvent, { type: 'end' }>): boolean {
  const code = event.error?.code;
  if (event.op === 'claim') return code === 'NO_FREE_MEMBER';
  return event.op === 'release' && (code === 'CLAIM_ENDED' || code === 'NOT_HOLDER');
}

function checkAnswers(events: StormEvent[], violations: string[]): void {
  for (const event of events) {
    if (event.type !== 'end') continue;
    const call = `${event.op} by ${event.identity} on ${event.pool}`;
    if (event.hung) violations.push(`hung call: ${call} outlived its bound of ${callBoundMs} ms`);
    const { error } = event;
    if (!error) continue;
    if (!error.isVdiError) violations.push(`not a VdiError: ${call}: ${error.message}`);
    else if (!documentedCodes.has(error.code ?? ''))
      violations.push(`undocumented code ${error.code}: ${call}`);
    else if (!isOrdinaryAnswer(event) && !error.retryable) {
      violations.push(`outage error not retryable: ${call}: ${error.code}: ${error.message}`);
    }
  }
}

interface ClusterState {
  members: MemberFacts[];
  leases: LeaseObject[];
}

async function readState(run: FaultRun): Promise<ClusterState> {
  const backend = run.vdi.context.backends.vm;
  if (!backend) throw new Error('no VM backend');
  const [members, leases] = await Promise.all([
    backend.listMembers(run.namespace),
    run.vdi.context.cluster.listLeases(run.namespace),
  ]);
  return { members, leases };
}

/** What the members' state says at rest: the members stuck. */
interface MemberJudgement {
  stuck: string[];
}

// Each member free (no Lease, stopped) or held (a live Lease, running); nothing left half way.
function judgeMembers(state: ClusterState, now: Date): MemberJudgement {
  const judgement: MemberJudgement = { stuck: [] };
  for (const member of state.members) {
    const lease = state.leases.find((each) => each.metadata.name === leaseNameFor(member.member));
    const want = lease && !isLeaseExpired(lease, now) ? 'running' : 'stopped';
    // the pass finishes a release a killed client left, so none may be left after it
    if (lease && isReleasing(lease)) {
      judgement.stuck.push(`stuck member: ${member.member} is still marked releasing after the engine pass`);
    } else if (member.power !== want) {
      judgement.stuck.push(
        `stuck member: ${member.member} is ${member.power} with ${lease ? 'a' : 'no'} Lease`,
      );
    }
  }
  return judgement;
}

function checkClaims(
  run: FaultRun,
  state: ClusterState,
  expected: Map<string, Expected>,
  violations: string[],
): number {
  const now = run.vdi.context.clock.now();
  const memberNames = new Set(state.members.map((member) => member.member));
  const claims = state.leases.filter((lease) => lease.metadata.labels?.[leasePoolLabel] !== undefined);
  const claimants = state.leases.filter((lease) =>
    lease.metadata.name?.startsWith(`${leaseNamePrefix}claimant-`),
  );
  const leaseOf = (member: string) => claims.find((lease) => lease.metadata.name === leaseNameFor(member));

  for (const [key, want] of expected) {
    if (want.kind === 'releasing' && !want.cutOff)
      violations.push(`unsettled: ${key} never learned how its release of ${want.member} ended`);
    if (want.kind !== 'held') continue;
    const lease = leaseOf(want.member);
    const session = lease?.metadata.annotations?.[sessionIdAnnotation];
    if (!lease || lease.spec.holderIdentity !== key.split(' ')[0] || session !== want.sessionId) {
      violations.push(
        `lost claim: ${key} was told ${want.member} (session ${want.sessionId}); its Lease is ${lease ? `${lease.spec.holderIdentity}'s, session ${session}` : 'gone'}`,
      );
    }
  }
  for (const lease of claims) {
    const member = lease.metadata.labels?.['corral.dev/vdi-member'] ?? '';
    const pool = lease.metadata.labels?.[leasePoolLabel] ?? '';
    if (!memberNames.has(member)) violations.push(`orphan: Lease ${lease.metadata.name} has no member`);
    const want = expected.get(`${lease.spec.holderIdentity} ${pool}`);
    const told = want?.kind === 'held' && want.member === member;
    if (!isLeaseExpired(lease, now) && !told) {
      violations.push(`orphan: ${member} is held by ${lease.spec.holderIdentity}, who was never told so`);
    }
  }
  for (const member of state.members) {
    const holder = member.presentation.holder;
    if (holder && leaseOf(member.member)?.spec.holderIdentity !== holder) {
      violations.push(`orphan: ${member.member} shows ${holder} as its holder without that claim's Lease`);
    }
  }
  return claimants.length;
}

// The calls that named the members a violation names, in order: the steps to read when one fails.
function historyOf(events: StormEvent[], violation: string): string {
  const named = new Set([...violation.matchAll(/\b(?:alpha|beta)-\d+\b/g)].map((match) => match[0]));
  return events
    .filter((event) => event.type !== 'summary' && event.member !== undefined && named.has(event.member))
    .map((event) => `    ${JSON.stringify(event)}`)
    .join('\n');
}

/**
 * After the storm: one session engine pass, judged a release bound later so it finishes any release a killed client
 * left marked, members given time to reach the power their claims call for, then every check: no lost claim, no
 * orphan, no stuck member (none left marked releasing), every outage error retryable and documented, no call
 * past its bound. Prints the figures.
 */
export async function checkAtRest(run: FaultRun, name: string, faultsSurvived: number): Promise<FaultReport> {
  const violations: string[] = [];
  // the storm's processes write the wall clock's time; a bound later, a release left marked is one that died
  run.clock.set(new Date(Date.now() + releaseStalledAfterMs));
  const pass = await run.vdi.createSessionEngine({ namespaces: [run.namespace] }).runPass();
  for (const error of pass.errors) violations.push(`the engine pass failed: ${error.code}: ${error.message}`);
  const now = run.vdi.context.clock.now();
  const expected = replayAnswers(run.events, violations);
  const isSettled = (read: ClusterState) => {
    const judged = judgeMembers(read, now);
    return judged.stuck.length === 0;
  };
  // the simulator moves members on its own time: wait for it, then judge what is left
  const state = await waitFor(() => readState(run), {
    describe: 'every member to be free and stopped, or held and running',
    timeoutMs: 20_000,
    until: isSettled,
  }).catch(async () => readState(run));
  const judged = judgeMembers(state, now);
  violations.push(...judged.stuck);
  const claimantLeasesLeft = checkClaims(run, state, expected, violations);
  checkAnswers(run.events, violations);

  const ends = run.events.filter((event) => event.type === 'end');
  const slowest = ends.reduce<(typeof ends)[number] | undefined>(
    (found, event) => (found === undefined || event.ms > found.ms ? event : found),
    undefined,
  );
  const errorsByCode: Record<string, number> = {};
  for (const event of ends) {
    const code = event.hung ? 'HUNG' : event.error?.code;
    if (code) errorsByCode[code] = (errorsByCode[code] ?? 0) + 1;
  }
  const figures: FaultFigures = {
    operations: ends.length,
    failedCalls: ends.filter((event) => event.error || event.hung).length,
    faultsSurvived,
    callerRetries: ends.filter((event) => event.error?.retryable).length,
    adapterRetries: run.events.reduce(
      (sum, event) => sum + (event.type === 'summary' ? event.retriesMade : 0),
      0,
    ),
    maxCallMs: Math.round(slowest?.ms ?? 0),
    slowestCall: slowest
      ? `${slowest.op} by ${slowest.identity} on ${slowest.pool}: ${slowest.hung ? 'hung' : (slowest.error?.code ?? 'ok')}`
      : 'none',
    errorsByCode,
    claimantLeasesLeft,
    releasesFinishedByPass: pass.resumed,
  };
  console.log(`${name}: ${JSON.stringify(figures)}`);
  for (const found of violations) {
    console.log(`  ${found}\n${historyOf(run.events, found)}`);
  }
  return { violations, figures };
}
