import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { EventEmitter } from 'eventemitter3';
import { z } from 'zod';
import { type AuditSink, MemoryAuditSink } from './audit.js';
import type { AdmissionPlan } from './capacity/admit-pool.js';
import { type PlanCapacityOptions, planCapacity } from './capacity/capacity-service.js';
import { type ClaimsService, createClaimsService } from './claims/claims-service.js';
import { defaultGoingDownWaitMs } from './claims/finish-takeover.js';
import type { Clock } from './clock.js';
import { type ConnectOptions, type ConnectResult, connect } from './connect-planner/connect.js';
import type { VdiContext } from './context.js';
import { createCtBackend } from './ct/ct-backend.js';
import { ctPoolKind } from './ct-pools/ct-pool-kind.js';
import {
  type ApplyCtPoolOptions,
  type ApplyCtPoolResult,
  applyCtPool,
  type CtPoolView,
  type DeleteCtPoolOptions,
  type DeleteCtPoolResult,
  deleteCtPool,
  getCtPool,
  listCtPools,
} from './ct-pools/ct-pool-service.js';
import { type OpenTerminalOptions, openTerminal } from './ct-pools/open-terminal.js';
import {
  type ReconcileCtPoolOptions,
  type ReconcileCtPoolResult,
  reconcileCtPool,
} from './ct-pools/reconcile-ct-pool.js';
import { checkPoolEntitlement } from './entitlements/pool-entitlement.js';
import type { VdiEvents } from './events.js';
import { KubeCluster } from './kube/cluster.js';
import type { TerminalStream } from './kube/pod-exec.js';
import type { RetryOptions } from './kube/retry.js';
import { lowestLimit, refusedByLimit } from './limits/user-limit.js';
import type { PoolRollout } from './pool-rollout.js';
import type { PoolStatus } from './pool-status/pool-status.js';
import { type PoolStatusOptions, readPoolStatus } from './pool-status/read-pool-status.js';
import { listPoolNamespaces } from './pools/list-pool-namespaces.js';
import {
  type CreatePoolOptions,
  type CreatePoolResult,
  createPool,
  type DeletePoolOptions,
  type DeletePoolResult,
  deletePool,
  getPool,
  type ListPoolsOptions,
  listPools,
  type PoolOptions,
  type ResizePoolOptions,
  type ResizePoolResult,
  resizePool,
  type SetPoolOptions,
  type SetPoolResult,
  setPool,
} from './pools/pool-service.js';
import type { PoolView } from './pools/pool-view.js';
import {
  type KeepPoolRolloutOptions,
  type KeepRolloutOutcome,
  type KeepRolloutsPassResult,
  keepPoolRollout,
  keepRollouts,
} from './rollouts/keep-rollout.js';
import {
  type SetPoolRolloutPausedOptions,
  type StartPoolRolloutOptions,
  type StartPoolRolloutResult,
  setPoolRolloutPaused,
  startPoolRollout,
} from './rollouts/start-rollout.js';
import { type KeepScheduleOutcome, keepPoolSchedule } from './schedules/keep-schedule.js';
import { type KeepSchedulesPassResult, keepSchedules } from './schedules/keep-schedules.js';
import {
  type SetPoolScheduleOptions,
  type SetPoolScheduleResult,
  setPoolSchedule,
} from './schedules/set-pool-schedule.js';
import {
  createSessionEngine,
  type SessionEngine,
  type SessionEngineOptions,
} from './sessions/session-engine.js';
import { type KeepSparesPassResult, keepSpares } from './spares/keep-spares.js';
import { type RedirectUsbOptions, type RedirectUsbResult, redirectUsb } from './usb/redirect-usb.js';
import { parseOptions, validateNamespace } from './validate.js';
import { createVmBackend } from './vm/vm-backend.js';
import { vmPoolKind } from './vm-pools/vm-pool-kind.js';
import { heldForWaiters } from './waitlist/plan-waitlist.js';
import { createWaitlistService, type WaitlistService } from './waitlist/waitlist-service.js';

/** The namespace used when neither the call nor `createVdi` names one. @category configuration */
export const defaultNamespace = 'corral-vms';

// Front ends take the cluster's configuration through the SDK, never from the adapter or client-node directly.
export type { KubeConfig } from '@kubernetes/client-node';
export { type KubeConfigSource, loadKubeConfig } from './kube/load-kube-config.js';

/** The real clock. @category time */
export const systemClock: Clock = { now: () => new Date() };

/** Options of {@link createVdi}. @category configuration */
export interface VdiOptions {
  /** The cluster to act on. Default: loaded the way kubectl does (`KUBECONFIG`, `~/.kube/config`, in-cluster). */
  kubeConfig?: KubeConfig;
  /**
   * The namespace calls use when they name none.
   * @defaultValue `'corral-vms'`
   */
  namespace?: string;
  /** Where time comes from; inject one in tests. @defaultValue {@link systemClock} */
  clock?: Clock;
  /** Where audit records go. @defaultValue a {@link MemoryAuditSink} of 1,000 records */
  audit?: AuditSink;
  /** How transient apiserver errors are retried. */
  retry?: RetryOptions;
  /**
   * How long a claim or a start waits, looking every 200 ms, for a member whose previous instance is still going
   * down (or the identity's own member being made again) before it answers `NO_FREE_MEMBER` or `STOP_FAILED`,
   * both retryable. A broker behind a proxy with a short request timeout wants it below that timeout.
   * @defaultValue `10000`
   */
  goingDownWaitMs?: number;
}

/** The SDK: every primitive, bound to one cluster. @category configuration */
export interface Vdi extends Omit<ClaimsService, 'claim'>, WaitlistService {
  /** Creates a pool by cloning a golden VM; see {@link createPool}. */
  createPool(options: CreatePoolOptions): Promise<CreatePoolResult>;
  /** The namespaces that hold pool members, read cluster-wide; see {@link listPoolNamespaces}. */
  listPoolNamespaces(): Promise<string[]>;
  /** Lists pools and their members; see {@link listPools}. */
  listPools(options?: ListPoolsOptions): Promise<PoolView[]>;
  /** One pool; see {@link getPool}. */
  getPool(options: PoolOptions): Promise<PoolView>;
  /** Grows or shrinks a pool; see {@link resizePool}. */
  resizePool(options: ResizePoolOptions): Promise<ResizePoolResult>;
  /** Changes a pool's spare setting `minReady`; see {@link setPool}. */
  setPool(options: SetPoolOptions): Promise<SetPoolResult>;
  /** A pool as an operator watches it: holders, sessions, spares, waiters; see {@link readPoolStatus}. */
  readPoolStatus(options: PoolStatusOptions): Promise<PoolStatus>;
  /** One spare keeper pass over the VM pools of a namespace; see {@link keepSpares}. */
  keepSpares(options?: { namespace?: string }): Promise<KeepSparesPassResult>;
  /** Gives a VM pool a schedule, or takes it away; see {@link setPoolSchedule}. */
  setPoolSchedule(options: SetPoolScheduleOptions): Promise<SetPoolScheduleResult>;
  /** One keeper pass over a scheduled VM pool; see {@link keepPoolSchedule}. */
  keepPoolSchedule(options: {
    name: string;
    namespace?: string;
    force?: boolean;
  }): Promise<KeepScheduleOutcome>;
  /** One keeper pass over the scheduled VM pools of a namespace; see {@link keepSchedules}. */
  keepSchedules(options?: { namespace?: string }): Promise<KeepSchedulesPassResult>;
  /** Moves a VM pool to a new golden VM; see {@link startPoolRollout}. */
  startPoolRollout(options: StartPoolRolloutOptions): Promise<StartPoolRolloutResult>;
  /** Pauses or resumes a pool's roll-out; see {@link setPoolRolloutPaused}. */
  setPoolRolloutPaused(options: SetPoolRolloutPausedOptions): Promise<PoolRollout>;
  /** One pass of a pool's roll-out; see {@link keepPoolRollout}. */
  keepPoolRollout(options: KeepPoolRolloutOptions): Promise<KeepRolloutOutcome>;
  /** One pass over the roll-outs under way in a namespace; see {@link keepRollouts}. */
  keepRollouts(options?: {
    namespace?: string;
    fence?: () => Promise<void>;
  }): Promise<KeepRolloutsPassResult>;
  /** Deletes a pool; see {@link deletePool}. */
  deletePool(options: DeletePoolOptions): Promise<DeletePoolResult>;
  /** Creates a container pool or replaces its spec; see {@link applyCtPool}. */
  applyCtPool(options: ApplyCtPoolOptions): Promise<ApplyCtPoolResult>;
  /** One container pool with its members; see {@link getCtPool}. */
  getCtPool(options: { name: string; namespace?: string }): Promise<CtPoolView>;
  /** The container pools of a namespace; see {@link listCtPools}. */
  listCtPools(options?: { namespace?: string }): Promise<CtPoolView[]>;
  /** Deletes a container pool and its members; see {@link deleteCtPool}. */
  deleteCtPool(options: DeleteCtPoolOptions): Promise<DeleteCtPoolResult>;
  /** One reconcile pass of a container pool; see {@link reconcileCtPool}. */
  reconcileCtPool(options: ReconcileCtPoolOptions): Promise<ReconcileCtPoolResult>;
  /** Opens a shell in a container desktop as a duplex stream; see {@link openTerminal}. */
  openTerminal(desktopId: string, options: OpenTerminalOptions): Promise<TerminalStream>;
  /** Answers "can I make (or grow to) N members from this golden VM?"; see {@link planCapacity}. */
  planCapacity(options: PlanCapacityOptions): Promise<AdmissionPlan>;
  /** Picks the console for a claimed desktop; see {@link connect}. */
  connect(options: ConnectOptions): Promise<ConnectResult>;
  /** Redirects a local USB device to a claimed desktop; see {@link redirectUsb}. */
  redirectUsb(options: RedirectUsbOptions): Promise<RedirectUsbResult>;
  /** Creates the session engine (console tracking, reclaim, renewal); see {@link createSessionEngine}. */
  createSessionEngine(options: SessionEngineOptions): SessionEngine;
  /**
   * Keeps watch-backed caches of the claim Leases, pool VMs and VMIs of `namespaces` (a namespace already cached
   * is left as it is): claims plan from them, and the session engine's passes and the broker's desktop lists read
   * them instead of listing. Without it, every read goes to the apiserver as before. Each cache lists once, then
   * watches; a failure is a `cache-failed` event and is tried again after a backoff. Needs `list` and `watch` on
   * Leases, VirtualMachines and VirtualMachineInstances. Stop them with {@link Vdi.stopCaches}.
   *
   * @throws {@link VdiError} `INVALID_INPUT` for a malformed namespace.
   */
  startCaches(namespaces: readonly string[]): void;
  /**
   * Resolves once every cache {@link Vdi.startCaches} started holds its first list and watches on from it (at once
   * when none was started): what a readiness probe waits for.
   *
   * @throws {@link VdiError} `FORBIDDEN` when a cache was refused before it synced; it keeps trying, so a later
   *   call may resolve.
   */
  waitForCacheSync(): Promise<void>;
  /** Stops the caches; reads go to the apiserver again. */
  stopCaches(): void;
  /** Typed events of everything the SDK does. */
  readonly events: EventEmitter<VdiEvents>;
  /** The audit sink in use. */
  readonly audit: AuditSink;
  /** The namespace calls use when they name none. */
  readonly namespace: string;
  /** The shared context, for the engines and the broker. */
  readonly context: VdiContext;
}

const optionsSchema = z.object({
  kubeConfig: z.instanceof(KubeConfig).optional(),
  namespace: z.string().optional(),
  clock: z.custom<Clock>((value) => typeof (value as Clock | undefined)?.now === 'function').optional(),
  audit: z
    .custom<AuditSink>((value) => typeof (value as AuditSink | undefined)?.record === 'function')
    .optional(),
  retry: z
    .object({ retries: z.number().int().min(0).max(20).optional(), minDelayMs: z.number().min(0).optional() })
    .optional(),
  goingDownWaitMs: z.number().int().min(0).max(600_000).optional(),
});

function loadDefaultKubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}

/**
 * Creates the SDK for one cluster.
 *
 * @example
 * ```ts
 * import { createVdi } from '@corral/vdi';
 *
 * const vdi = createVdi({ namespace: 'corral-vms' });
 * const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
 * console.log(desktop.id, desktop.startError ?? 'started');
 * await vdi.release({ member: desktop.member, identity: 'alice@example.com' });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options.
 * @category configuration
 */
export function createVdi(options: VdiOptions = {}): Vdi {
  const parsed = parseOptions(optionsSchema, options, 'createVdi');
  const events = new EventEmitter<VdiEvents>();
  const context: VdiContext = {
    cluster: new KubeCluster(parsed.kubeConfig ?? loadDefaultKubeConfig(), parsed.retry),
    clock: parsed.clock ?? systemClock,
    events,
    audit: parsed.audit ?? new MemoryAuditSink(),
    defaultNamespace: parsed.namespace ?? defaultNamespace,
    goingDownWaitMs: parsed.goingDownWaitMs ?? defaultGoingDownWaitMs,
    newSessionId: randomUUID,
    backends: {},
    poolKinds: { vm: vmPoolKind, ct: ctPoolKind },
    claimPolicy: {
      admit: checkPoolEntitlement,
      heldForWaiters,
      limitOf: lowestLimit,
      refusedByLimit,
    },
  };
  context.backends.vm = createVmBackend(context);
  context.backends.ct = createCtBackend(context);
  return {
    ...createClaimsService(context),
    // after the claims service: its claim gives way to the one that may wait
    ...createWaitlistService(context),
    createPool: (pool) => createPool(context, pool),
    listPoolNamespaces: () => listPoolNamespaces(context),
    listPools: (list) => listPools(context, list),
    getPool: (pool) => getPool(context, pool),
    resizePool: (resize) => resizePool(context, resize),
    setPool: (pool) => setPool(context, pool),
    keepSpares: (pass) => keepSpares(context, pass),
    setPoolSchedule: (schedule) => setPoolSchedule(context, schedule),
    keepPoolSchedule: (pass) => keepPoolSchedule(context, pass),
    keepSchedules: (pass) => keepSchedules(context, pass),
    startPoolRollout: (rollout) => startPoolRollout(context, rollout),
    setPoolRolloutPaused: (paused) => setPoolRolloutPaused(context, paused),
    keepPoolRollout: (pass) => keepPoolRollout(context, pass),
    keepRollouts: (pass) => keepRollouts(context, pass),
    readPoolStatus: (status) => readPoolStatus(context, status),
    deletePool: (pool) => deletePool(context, pool),
    applyCtPool: (pool) => applyCtPool(context, pool),
    getCtPool: (pool) => getCtPool(context, pool),
    listCtPools: (list) => listCtPools(context, list),
    deleteCtPool: (pool) => deleteCtPool(context, pool),
    reconcileCtPool: (pool) => reconcileCtPool(context, pool),
    openTerminal: (desktopId, terminal) => openTerminal(context, desktopId, terminal),
    planCapacity: (plan) => planCapacity(context, plan),
    connect: (target) => connect(context, target),
    redirectUsb: (redirect) => redirectUsb(context, redirect),
    createSessionEngine: (engine) => createSessionEngine(context, engine),
    startCaches(namespaces) {
      context.cluster.startCaches(namespaces.map(validateNamespace), {
        clock: context.clock,
        onFailure: (error, cached) => events.emit('cache-failed', { cached, error: error.message }),
      });
    },
    waitForCacheSync: () => context.cluster.waitForCacheSync(),
    stopCaches: () => context.cluster.stopCaches(),
    events,
    audit: context.audit,
    namespace: context.defaultNamespace,
    context,
  };
}
