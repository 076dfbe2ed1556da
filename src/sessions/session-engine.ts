import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { VdiContext } from '../context.js';
import type { DesktopBackend, DesktopKind, ResetHow } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import { namespaceSchema, parseOptions } from '../validate.js';
import { sessionFactsOf } from './console-marks.js';
import {
  type ConsoleEnd,
  type ConsoleHandle,
  createConsoleTracker,
  type OpenConsoleOptions,
} from './console-tracker.js';
import { createInputTracker } from './input-tracker.js';
import {
  checkReclaimPolicy,
  defaultReclaimPolicy,
  describeSession,
  type ReclaimPolicy,
  type ReclaimReason,
} from './plan-reclaim.js';
import { notEntitledReclaimAt, policyFor } from './plan-reclaim-pass.js';
import { planRenewal } from './plan-renewal.js';
import { runReclaimPass, type SessionPassResult } from './run-reclaim-pass.js';

export type { ConsoleEnd, ConsoleHandle, ConsoleKind, OpenConsoleOptions } from './console-tracker.js';
export type { SessionPassResult } from './run-reclaim-pass.js';
export { reclaimActor } from './run-reclaim-pass.js';

/** Options of {@link createSessionEngine}. @category sessions */
export interface SessionEngineOptions {
  /** The namespaces whose claims this engine renews and reclaims; run one engine per set of namespaces. */
  namespaces: string[];
  /** The reclaim policy; missing fields take {@link defaultReclaimPolicy}'s values. */
  policy?: Partial<ReclaimPolicy>;
  /**
   * Time between passes of {@link SessionEngine.start}'s timer, in ms.
   * @defaultValue 30000
   */
  intervalMs?: number;
  /**
   * Renew a claim's Lease once its last renewal is this old, in ms.
   * @defaultValue a third of each Lease's `leaseDurationSeconds`
   */
  renewIntervalMs?: number;
  /**
   * When this process started, for the restart rule of {@link planReclaim}.
   * @defaultValue the context clock's time when the engine is created
   */
  processStartedAt?: Date;
  /**
   * Called before each write a pass makes (a renewal, a session mark, each step of a reclaim); a throw stops the
   * pass's writes and is reported once in {@link SessionPassResult.errors}. A broker replica passes its
   * leader elector's `fence` so that a former leader that wakes after losing the leader Lease writes nothing.
   * @defaultValue none: one process per set of namespaces writes unchecked
   */
  fence?: () => Promise<void>;
  /**
   * The ID this broker replica records its open consoles under on the claims' Leases
   * (`corral.dev/vdi-consoles`), such as its leader-election identity. Every running replica needs its own; a
   * restarted one may keep it, as its old entries count only until they expire. 1 to 253 printable ASCII
   * characters.
   * @defaultValue a new one per engine: the host name and a random suffix
   */
  replicaId?: string;
  /**
   * How often, in ms, this replica refreshes its console entries while it has consoles open. An entry not
   * refreshed for three times this is a dead replica's: its consoles count as closed from then on.
   * @defaultValue 60000
   */
  heartbeatMs?: number;
  /** Told each pass as it starts, with the promise of its result; the broker's metrics time passes with it. */
  observePass?: (pass: Promise<SessionPassResult>) => void;
  /**
   * The shortest time between two writes of a desktop's `corral.dev/vdi-input-at` mark, in ms: idle reclaim sees
   * input on another replica at most this much (plus a pass) late.
   * @defaultValue 30000
   */
  inputMarkIntervalMs?: number;
}

/** The session fields of a desktop view (times in RFC 3339). @category sessions */
export interface DesktopSession {
  /** Whether a console of the desktop is open in this process or in another live broker replica. */
  connected: boolean;
  /** Since when the disconnect grace runs: the last disconnect, or the engine's start after a restart. */
  disconnectedAt: string | undefined;
  /** The earliest pending reclaim; it may lie in the past until the next pass acts on it. */
  reclaimAt: string | undefined;
  reclaimReason: ReclaimReason | undefined;
  /** `true` while the idle reclaim comes within the idle warning: input on a broker console keeps the desktop. */
  idleWarning?: true;
  /** `true` while the holder is warned of the pending reclaim (`reclaimReason`, at `reclaimAt`): idle or maximum age. */
  reclaimWarning?: true;
}

/** Options of {@link SessionEngine.endConsoles}. @category sessions */
export interface EndConsolesOptions {
  namespace: string;
  member: string;
  /** Why they end; it reaches each handle's `ended` signal. */
  end: ConsoleEnd;
}

/** The console tracker and the reclaim and renewal loop of one process. @category sessions */
export interface SessionEngine {
  /**
   * Counts a console of a claimed desktop. When it is the desktop's first open console, its start is
   * recorded on the Lease (`corral.dev/vdi-connected-at`) before this resolves. A v0.6.0 assignment or a member
   * whose Lease is gone (which only an administrator may open) has no Lease to record on: its console is not
   * counted.
   *
   * @throws {@link VdiError} `CLAIM_ENDED` when the desktop is not claimed, `CLAIM_EXPIRED` when its claim
   *   expired, `INVALID_INPUT` for bad options or a namespace the engine does not serve, and the apiserver's
   *   errors when the mark cannot be written (the console is then not counted).
   */
  openConsole(options: OpenConsoleOptions): Promise<ConsoleHandle>;
  /**
   * Ends every console of a member open in this process, as a release or reclaim does before it resets the
   * member: each handle's `ended` signal aborts with `end`, and the handle closes (recording the disconnect).
   * Resolves with how many ended, once their marks are written or left for the next pass.
   */
  endConsoles(options: EndConsolesOptions): Promise<number>;
  /**
   * Ends every console of a member open in this process once the member is down, as a release or reclaim does
   * after its reset succeeded: at once for a `recreated` member, else once its instance is gone (at most two
   * minutes). Until then each handle's `ending()` tells `end`, so a console whose stream closes as the guest goes
   * says why. Resolves with how many ended.
   */
  endConsolesWhenDown(options: EndConsolesOptions & { kind: DesktopKind; reset: ResetHow }): Promise<number>;
  /**
   * Tells the member's consoles in this process how they end while a release or reclaim of it runs here: one whose
   * stream closes as the guest stops, which may come before the release answers, closes with `end`. Call the
   * returned function once the release answered (then {@link SessionEngine.endConsolesWhenDown}) or failed.
   */
  expectConsolesEnd(options: EndConsolesOptions): () => void;
  /**
   * Records input (a key, a pointer event, terminal bytes) that a console of this process carried to a desktop: it
   * keeps the desktop from idle reclaim. The Lease mark is written at most once per `inputMarkIntervalMs`. Never
   * throws.
   */
  noteInput(desktop: { namespace: string; member: string }): void;
  /** Runs a pass now and then every `intervalMs` until {@link SessionEngine.stop}. Calling it twice does nothing. */
  start(): void;
  /** Stops the passes' timer and waits for a running pass. Open consoles stay counted, and their heartbeat runs on. */
  stop(): Promise<void>;
  /**
   * One pass over the served namespaces: reclaims what the policy says, renews Leases that are due, and writes
   * session marks that an earlier write missed. Calls during a pass share that pass.
   */
  runPass(): Promise<SessionPassResult>;
  /**
   * Refreshes this replica's console entries (`seenAt`) on the Leases of the desktops it has consoles open for,
   * and writes any that a failed write missed. A timer does this every `heartbeatMs` while consoles are open,
   * whether or not the engine was started. Never throws: what fails is left for the next heartbeat or pass.
   */
  heartbeat(): Promise<void>;
  /**
   * The session fields of a desktop, from its Lease (as read: the console entries of every live replica) and
   * this process's consoles. No I/O.
   */
  describe(desktop: { namespace: string; member: string; lease: LeaseObject | undefined }): DesktopSession;
  /** The policy in force. */
  readonly policy: Readonly<ReclaimPolicy>;
  readonly processStartedAt: Date;
  /** The ID this replica records its consoles under. */
  readonly replicaId: string;
}

const positiveMs = z.number().int().positive().max(2_147_483_647);
const optionsSchema = z.object({
  namespaces: z.array(namespaceSchema).min(1),
  policy: z
    .object({
      disconnectGraceMs: z.number().optional(),
      maxSessionMs: z.number().optional(),
      idleTimeoutMs: z.number().optional(),
      idleWarningMs: z.number().optional(),
      reclaimWarningMs: z.number().optional(),
    })
    .optional(),
  inputMarkIntervalMs: positiveMs.optional(),
  intervalMs: positiveMs.optional(),
  renewIntervalMs: positiveMs.optional(),
  processStartedAt: z.date().optional(),
  fence: z.custom<() => Promise<void>>((value) => typeof value === 'function').optional(),
  replicaId: z
    .string()
    .regex(/^[\x21-\x7e]{1,253}$/, 'use 1 to 253 printable ASCII characters, such as the pod name')
    .optional(),
  heartbeatMs: positiveMs.optional(),
});

// a replica that restarts is another replica: the entries of the one before are a dead one's
function newReplicaId(): string {
  return `${hostname()}-${randomUUID().slice(0, 8)}`;
}

/**
 * Creates the session engine of one process: it counts open consoles, records connected periods on the claims'
 * Leases, renews the Leases of live claims in its namespaces, and reclaims desktops by the policy of
 * {@link planReclaim} through the same path as a release (a persistent member stops, an ephemeral one is
 * recreated). A pass reads each namespace's claim Leases with one list request, plans with
 * {@link planReclaimPass}, and writes only to Leases that need a renewal or a mark. Decisions use `ctx.clock`;
 * only the timer's scheduling uses real time.
 *
 * @example
 * ```ts
 * const engine = createSessionEngine(vdi.context, {
 *   namespaces: ['corral-vms'],
 *   policy: { disconnectGraceMs: parseDuration(process.env.CORRAL_VDI_DISCONNECT_GRACE ?? '15m') },
 * });
 * engine.start();
 * const handle = await engine.openConsole({ member: 'devpool-1', identity: 'alice@example.com', kind: 'vnc' });
 * // an upgraded socket may end or fail without a close; closing the handle again waits for the first close
 * for (const event of ['end', 'error', 'close']) socket.once(event, () => void handle.close());
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options.
 * @category sessions
 */
export function createSessionEngine(ctx: VdiContext, options: SessionEngineOptions): SessionEngine {
  const parsed = parseOptions(optionsSchema, options, 'createSessionEngine');
  const namespaces = [...new Set(parsed.namespaces)];
  const policy: ReclaimPolicy = { ...defaultReclaimPolicy, ...parsed.policy };
  checkReclaimPolicy(policy);
  const intervalMs = parsed.intervalMs ?? 30_000;
  const processStartedAt = parsed.processStartedAt ?? ctx.clock.now();
  const replicaId = parsed.replicaId ?? newReplicaId();
  const tracker = createConsoleTracker(ctx, {
    namespaces,
    replicaId,
    heartbeatMs: parsed.heartbeatMs ?? 60_000,
    processStartedAt,
  });
  const inputs = createInputTracker(ctx, parsed.inputMarkIntervalMs ?? 30_000);
  const setup = {
    namespaces,
    tracker,
    inputs,
    poolSettings: new Map(),
    backends: Object.values(ctx.backends).filter((backend): backend is DesktopBackend => !!backend),
    policy,
    renewIntervalMs: parsed.renewIntervalMs,
    processStartedAt,
    fence: parsed.fence,
  };

  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<SessionPassResult> | undefined;

  function runPass(): Promise<SessionPassResult> {
    if (running) return running;
    running = runReclaimPass(ctx, setup).finally(() => {
      running = undefined;
    });
    options.observePass?.(running);
    return running;
  }

  return {
    openConsole: tracker.openConsole,
    endConsoles: ({ namespace, member, end }) => tracker.endConsoles(namespace, member, end),
    endConsolesWhenDown: ({ end, ...target }) => tracker.endConsolesWhenDown(target, end),
    expectConsolesEnd: ({ namespace, member, end }) => tracker.expectEnd(namespace, member, end),
    noteInput: ({ namespace, member }) => inputs.noteInput(namespace, member),
    runPass,
    heartbeat: tracker.heartbeat,
    start() {
      if (timer !== undefined) return;
      void runPass();
      timer = setInterval(() => void runPass(), intervalMs);
      // the engine alone never keeps a process alive
      timer.unref();
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },
    describe({ namespace, member, lease }) {
      const empty: DesktopSession = {
        connected: false,
        disconnectedAt: undefined,
        reclaimAt: undefined,
        reclaimReason: undefined,
      };
      if (!lease || planRenewal(lease, ctx.clock.now()).kind === 'expired') return empty;
      const facts = sessionFactsOf(
        lease,
        tracker.trackedFor(namespace, member, lease),
        { replicaId, now: ctx.clock.now(), processStartedAt },
        inputs.inputsIn(namespace).get(member),
      );
      if (!facts) return empty;
      const own = policyFor(lease, policy, setup.poolSettings.get(namespace));
      const view = describeSession(facts, own, ctx.clock.now());
      // the pass marks a claim whose pool no longer lets its holder in, and clears the mark when it does again
      const notEntitledAt = notEntitledReclaimAt(lease, own);
      const pending =
        notEntitledAt !== undefined && (view.reclaimAt === undefined || notEntitledAt < view.reclaimAt)
          ? { at: notEntitledAt, reason: 'not-entitled' as const }
          : { at: view.reclaimAt, reason: view.reclaimReason };
      // a warning speaks of the policy's reclaim, not of an earlier not-entitled one
      const warned = pending.reason === view.reclaimReason;
      return {
        connected: view.connected,
        disconnectedAt: view.disconnectedAt?.toISOString(),
        reclaimAt: pending.at?.toISOString(),
        reclaimReason: pending.reason,
        ...(warned && view.idleWarning ? { idleWarning: true as const } : {}),
        ...(warned && view.reclaimWarning ? { reclaimWarning: true as const } : {}),
      };
    },
    policy,
    processStartedAt,
    replicaId,
  };
}
