import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import type { VdiEvents } from '../events.js';
import type { SharedReads } from '../kube/cluster.js';
import { newSharedReads, type PlannedPool } from '../pool-status/read-pool-plans.js';
import type { PoolMemberCounts } from './count-pool-members.js';

/** Why a release ran: its holder asked, or an admin released someone else's desktop. @category metrics */
export type ReleaseReason = 'holder' | 'admin';

/**
 * The broker's Prometheus metrics, in a registry of its own (never prom-client's global one), so two brokers in
 * one process keep theirs apart. Counters are fed by small hooks; the gauges are read when scraped.
 *
 * @category metrics
 */
export interface BrokerMetrics {
  /** The registry, to add metrics of the host's own or to merge with another registry. */
  readonly registry: Registry;
  /** The `Content-Type` of {@link BrokerMetrics.render}'s text. */
  readonly contentType: string;
  /** Reads the pool gauges (one read per scrape) and renders every metric in the Prometheus text format. */
  render(): Promise<string>;
  /** Sets `corral_vdi_leader`: whether this replica runs the reclaim passes now. */
  setLeader(leading: boolean): void;
  /** Counts and times a claim by its outcome (`ok` or the error code) and hands its result on. */
  timeClaim<T>(claim: Promise<T>): Promise<T>;
  /** Counts a release by reason and result (`ok` or the error code) once it settles, and hands it on. */
  countRelease<T>(reason: ReleaseReason, release: Promise<T>): Promise<T>;
  /** Times a reclaim pass of the session engine. */
  timeReclaimPass(pass: Promise<unknown>): void;
  /** Stops listening to the cluster adapter and the SDK's events. */
  detach(): void;
}

/** What {@link createBrokerMetrics} reads from: the SDK's context and the broker's own views. @category metrics */
export interface BrokerMetricsOptions {
  ctx: VdiContext;
  /** The pools' member counts, read once per scrape; `shared` holds the lists the scrape's reads share. */
  readPools(shared: SharedReads): Promise<PoolMemberCounts[]>;
  /** The pools' schedules and roll-outs, read once per scrape, sharing `shared`. @defaultValue none */
  readPlans?: (shared: SharedReads) => Promise<PlannedPool[]>;
  /** The console websockets open through this broker now. */
  readConsoles(): ReadonlyArray<{ protocol: string }>;
  /** Where a failed pool read is reported. */
  log(message: string): void;
}

const prefix = 'corral_vdi_';
// Claims wait on Lease writes and a start request: tens of ms on a quiet cluster, seconds under contention.
const claimBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
// A pass lists and writes per namespace; a reclaim in it waits on a stop or a clone.
const passBuckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

const seconds = (since: number) => (performance.now() - since) / 1000;
const outcomeOf = (error: unknown) => (isVdiError(error) ? error.code : 'INTERNAL');

/**
 * Creates the metrics of one broker: pool gauges, claims, releases, reclaims, reclaim passes, Lease conflicts,
 * claimant Leases left, apiserver requests, open consoles and leader state. It listens to `ctx.cluster` and `ctx.events` until
 * {@link BrokerMetrics.detach}.
 *
 * @example
 * ```ts
 * const metrics = createBrokerMetrics({ ctx, readPools, readConsoles: () => [], log: console.warn });
 * metrics.setLeader(true);
 * console.log(await metrics.render());
 * ```
 * @category metrics
 */
export function createBrokerMetrics(options: BrokerMetricsOptions): BrokerMetrics {
  const { ctx, readPools, readConsoles, log } = options;
  const readPlans = options.readPlans ?? (async () => []);
  const registry = new Registry();
  const registers = [registry];
  const poolLabels = ['kind', 'namespace', 'pool'] as const;
  const poolGauge = (name: string, help: string) =>
    new Gauge({ name: `${prefix}pool_${name}_members`, help, labelNames: poolLabels, registers });
  const pools = {
    desired: poolGauge(
      'desired',
      "Members the pool should have: a container pool's spec size, a VM pool's members not being deleted.",
    ),
    free: poolGauge('free', 'Members a claim could take now.'),
    claimed: poolGauge('claimed', 'Members someone holds.'),
    running: poolGauge('running', 'Members running.'),
    failed: poolGauge('failed', 'Members whose backend reports a failure.'),
  };
  const rollouts = new Gauge({
    name: `${prefix}pool_rollout_members`,
    help: 'Members of a pool with a roll-out under way: on the new golden VM (on-target), all of them (total), being rebuilt (rebuilding), claimed ones waiting for their release or the deadline (waiting).',
    labelNames: ['kind', 'namespace', 'pool', 'to', 'state'] as const,
    registers,
  });
  const rolloutsPaused = new Gauge({
    name: `${prefix}pool_rollout_paused`,
    help: 'Whether a roll-out under way is paused (1) or going on (0).',
    labelNames: ['kind', 'namespace', 'pool', 'to'] as const,
    registers,
  });
  const schedulePeriod = new Gauge({
    name: `${prefix}pool_schedule_period`,
    help: 'Always 1, for each scheduled pool: the period in force (empty outside every period) and the one the pool is warmed ahead for (empty when none).',
    labelNames: ['kind', 'namespace', 'pool', 'period', 'warming_for'] as const,
    registers,
  });
  const scheduleTargets = new Gauge({
    name: `${prefix}pool_schedule_target_members`,
    help: "What a scheduled pool's keeper aims at now: its size (size) and its free running members (free-running).",
    labelNames: ['kind', 'namespace', 'pool', 'target'] as const,
    registers,
  });
  const scheduleToZero = new Gauge({
    name: `${prefix}pool_schedule_scale_to_zero`,
    help: 'Whether the period in force lets the free running members go down to none (1) or keeps one at least (0).',
    labelNames: ['kind', 'namespace', 'pool'] as const,
    registers,
  });
  const scheduleNextChange = new Gauge({
    name: `${prefix}pool_schedule_next_change_timestamp_seconds`,
    help: "When a scheduled pool's period next changes, in seconds since the epoch.",
    labelNames: ['kind', 'namespace', 'pool'] as const,
    registers,
  });
  const scheduleUnderway = new Gauge({
    name: `${prefix}pool_schedule_underway_members`,
    help: "Members a scheduled pool's keeper is moving toward its targets: to clone (cloning), starting, stopping, being removed (removing), waiting to settle before a scale-down (settling).",
    labelNames: ['kind', 'namespace', 'pool', 'state'] as const,
    registers,
  });
  const scheduleFailures = new Gauge({
    name: `${prefix}pool_schedule_failures`,
    help: "A scheduled pool's keeper passes that failed in a row; 0 once one succeeds.",
    labelNames: ['kind', 'namespace', 'pool'] as const,
    registers,
  });
  const planGauges = [
    rollouts,
    rolloutsPaused,
    schedulePeriod,
    scheduleTargets,
    scheduleToZero,
    scheduleNextChange,
    scheduleUnderway,
    scheduleFailures,
  ];
  const rebuilds = new Counter({
    name: `${prefix}rollout_rebuilds_total`,
    help: 'Members this replica rebuilt for a roll-out, by result (rebuilt or failed).',
    labelNames: ['result'] as const,
    registers,
  });
  const poolReadFailures = new Counter({
    name: `${prefix}pool_read_failures_total`,
    help: 'Scrapes whose pool read failed; the pool, schedule and roll-out gauges are empty in those.',
    registers,
  });
  const claims = new Counter({
    name: `${prefix}claims_total`,
    help: 'Claims through the broker, by outcome: ok or the error code.',
    labelNames: ['outcome'],
    registers,
  });
  const claimDuration = new Histogram({
    name: `${prefix}claim_duration_seconds`,
    help: 'How long a claim through the broker took, by outcome.',
    labelNames: ['outcome'],
    buckets: claimBuckets,
    registers,
  });
  const releases = new Counter({
    name: `${prefix}releases_total`,
    help: 'Releases through the broker, by reason (holder, admin) and result (ok or the error code).',
    labelNames: ['reason', 'result'],
    registers,
  });
  const reclaims = new Counter({
    name: `${prefix}reclaims_total`,
    help: 'Reclaims by the session engine, by reason (disconnect-grace, max-duration, idle, not-entitled) and result (ok, failed).',
    labelNames: ['reason', 'result'],
    registers,
  });
  const passDuration = new Histogram({
    name: `${prefix}reclaim_pass_duration_seconds`,
    help: 'How long a pass of the session engine (renewals and reclaims) took.',
    buckets: passBuckets,
    registers,
  });
  const leaseConflicts = new Counter({
    name: `${prefix}lease_conflicts_total`,
    help: 'Lease writes the apiserver refused with 409, by verb: create (lost the race), update (stale read).',
    labelNames: ['verb'],
    registers,
  });
  const claimantLeasesLeft = new Counter({
    name: `${prefix}claimant_leases_left_total`,
    help: 'Claimant Leases a claim could not delete as it ended (most often no delete on Leases); each makes the next claim of its identity and pool wait 5 s.',
    registers,
  });
  const requests = new Counter({
    name: `${prefix}apiserver_requests_total`,
    help: 'Apiserver requests, each try, by verb and code: 2xx, the failure status, or error without an answer.',
    labelNames: ['verb', 'code'],
    registers,
  });
  new Gauge({
    name: `${prefix}open_consoles`,
    help: 'Console websockets open through this broker now, by protocol.',
    labelNames: ['protocol'],
    registers,
    collect() {
      this.reset();
      for (const { protocol } of readConsoles()) this.inc({ protocol });
    },
  });
  const leader = new Gauge({
    name: `${prefix}leader`,
    help: 'Whether this replica runs the reclaim passes now (1) or not (0).',
    registers,
  });
  leader.set(0);

  const stopObserving = ctx.cluster.observe({
    request: (verb, code) => requests.inc({ verb, code }),
    leaseConflict: (verb) => leaseConflicts.inc({ verb }),
  });
  const onReclaimed = ({ reason }: VdiEvents['reclaimed'][0]) => reclaims.inc({ reason, result: 'ok' });
  const onReclaimFailed = ({ reason }: VdiEvents['reclaim-failed'][0]) =>
    reclaims.inc({ reason, result: 'failed' });
  const onClaimantLeaseLeft = () => claimantLeasesLeft.inc();
  const onRollout = ({ step }: VdiEvents['pool-rollout'][0]) => {
    if (step !== 'rebuilding') rebuilds.inc({ result: step });
  };
  ctx.events.on('pool-rollout', onRollout);
  ctx.events.on('reclaimed', onReclaimed);
  ctx.events.on('reclaim-failed', onReclaimFailed);
  ctx.events.on('claimant-lease-left', onClaimantLeaseLeft);

  async function readPoolGauges(): Promise<void> {
    for (const gauge of [...Object.values(pools), ...planGauges]) gauge.reset();
    let counts: PoolMemberCounts[];
    let plans: PlannedPool[];
    try {
      // one scrape reads each list once, the container pool specs too, which both its reads need
      const shared = newSharedReads();
      [counts, plans] = await Promise.all([readPools(shared), readPlans(shared)]);
    } catch (error) {
      poolReadFailures.inc();
      log(
        `broker: the metrics could not read the pools: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    for (const count of counts) {
      const labels = { kind: count.kind, namespace: count.namespace, pool: count.pool };
      for (const [state, gauge] of Object.entries(pools)) {
        gauge.set(labels, count[state as keyof typeof pools]);
      }
    }
    for (const planned of plans) setPlanGauges(planned);
  }

  function setPlanGauges(planned: PlannedPool): void {
    const pool = { kind: planned.kind, namespace: planned.namespace, pool: planned.pool };
    const { rollOut, schedule } = planned;
    if (rollOut && rollOut.finishedAt === null) {
      const states = {
        'on-target': rollOut.onTarget,
        total: rollOut.total,
        rebuilding: rollOut.rebuilding.length,
        waiting: rollOut.claimed.length,
      };
      for (const [state, value] of Object.entries(states))
        rollouts.set({ ...pool, to: rollOut.to, state }, value);
      rolloutsPaused.set({ ...pool, to: rollOut.to }, rollOut.paused ? 1 : 0);
    }
    if (!schedule) return;
    schedulePeriod.set({ ...pool, period: schedule.period ?? '', warming_for: schedule.warmingFor ?? '' }, 1);
    scheduleTargets.set({ ...pool, target: 'size' }, schedule.targets.size);
    scheduleTargets.set({ ...pool, target: 'free-running' }, schedule.targets.freeRunning);
    scheduleToZero.set(pool, schedule.scaleToZero ? 1 : 0);
    if (schedule.nextChange) scheduleNextChange.set(pool, Date.parse(schedule.nextChange.at) / 1000);
    for (const [state, value] of Object.entries(schedule.underway))
      scheduleUnderway.set({ ...pool, state }, value);
    scheduleFailures.set(pool, schedule.failure?.attempts ?? 0);
  }

  return {
    registry,
    contentType: registry.contentType,
    async render() {
      await readPoolGauges();
      return await registry.metrics();
    },
    setLeader: (leading) => leader.set(leading ? 1 : 0),
    async timeClaim(claim) {
      const since = performance.now();
      try {
        const result = await claim;
        claims.inc({ outcome: 'ok' });
        claimDuration.observe({ outcome: 'ok' }, seconds(since));
        return result;
      } catch (error) {
        const outcome = outcomeOf(error);
        claims.inc({ outcome });
        claimDuration.observe({ outcome }, seconds(since));
        throw error;
      }
    },
    async countRelease(reason, release) {
      try {
        const result = await release;
        releases.inc({ reason, result: 'ok' });
        return result;
      } catch (error) {
        releases.inc({ reason, result: outcomeOf(error) });
        throw error;
      }
    },
    timeReclaimPass(pass) {
      const since = performance.now();
      const done = () => passDuration.observe(seconds(since));
      pass.then(done, done);
    },
    detach() {
      stopObserving();
      ctx.events.off('reclaimed', onReclaimed);
      ctx.events.off('reclaim-failed', onReclaimFailed);
      ctx.events.off('claimant-lease-left', onClaimantLeaseLeft);
      ctx.events.off('pool-rollout', onRollout);
    },
  };
}
