import { z } from 'zod';
import { type AuditRecord, type AuditSink, MemoryAuditSink } from '../audit.js';
import type { Clock } from '../clock.js';
import { VdiError } from '../errors.js';
import type { LeaderElectorOptions } from '../leader/leader-elector.js';
import type { SessionEngineOptions } from '../sessions/session-engine.js';
import { parseOptions } from '../validate.js';
import { createVdi, defaultNamespace, type KubeConfig, type Vdi } from '../vdi.js';
import { type BrokerSettings, defaultDrainDelayMs } from './broker-settings.js';
import type { IdentityProvider } from './identity.js';

/** An audit sink the broker can read back for `GET /api/tasklog`. @category broker */
export interface ReadableAuditSink extends AuditSink {
  /** The kept records, oldest first. */
  list(): AuditRecord[] | Promise<AuditRecord[]>;
}

/**
 * The facts of a log line beside its message: its level (`warn` when absent), and for a line about an HTTP
 * request its ID (`X-Request-Id`), method, path, status and duration. @category broker
 */
export interface BrokerLogFields {
  level?: 'info' | 'warn' | 'error';
  requestId?: string;
  method?: string;
  path?: string;
  status?: number;
  durationMs?: number;
}

/**
 * Receives the broker's log lines, one call each: a line per HTTP request (`info`), warnings and unexpected
 * errors. A logger that takes only the message gets the text; `corral-vdi broker serve --log-format json`
 * writes the fields too. @category broker
 */
export type BrokerLogger = (message: string, fields?: BrokerLogFields) => void;

/**
 * Leader election among broker replicas: what {@link createLeaderElector} takes, but the namespace is optional.
 * @category broker
 */
export interface BrokerLeaderElection
  extends Omit<LeaderElectorOptions, 'namespace' | 'onStarted' | 'onStopped' | 'log'> {
  /** Where the leader Lease lives. @defaultValue the first served namespace */
  namespace?: string;
}

/** Options of {@link createBroker}. @category broker */
export interface BrokerOptions extends BrokerSettings {
  /**
   * Who the callers are. Providers are asked in order; the first login wins. A request none identifies is
   * anonymous and gets 401.
   */
  identity: IdentityProvider[];
  /** Tokens of Corral peers (`Authorization: Bearer <token>`); such a request is a service identity and gets 403. */
  peerTokens?: string[];
  /**
   * The SDK to act through. Its audit sink must have `list()` (a {@link MemoryAuditSink} does) for the task
   * log. Default: one made from `kubeConfig` and `clock` with a {@link MemoryAuditSink}.
   */
  vdi?: Vdi;
  /** The cluster, when `vdi` is not given. Default: loaded the way kubectl does. */
  kubeConfig?: KubeConfig;
  /** Where time comes from, when `vdi` is not given. */
  clock?: Clock;
  /**
   * Time between reclaim passes while started, in ms.
   * @defaultValue 30000
   */
  intervalMs?: number;
  /** Where log lines go. @defaultValue warnings and errors to `console.warn`; request lines nowhere */
  log?: BrokerLogger;
  /**
   * Run as one of several replicas: only the replica that holds the leader Lease runs the session passes and the
   * container-pool reconcile loop, and every write of its passes is fenced on that Lease. Every replica serves the
   * API. @defaultValue off: this process runs the passes once started
   */
  leaderElection?: BrokerLeaderElection;
  /**
   * Keep watch-backed caches of the served namespaces while started (see `Vdi.startCaches`): `start()` starts
   * them and `stop()` stops them; `vdi.waitForCacheSync()` tells when they are ready. `serveBroker` turns it on.
   * @defaultValue `false`
   */
  caches?: boolean;
  /**
   * Serve the metrics at `GET /metrics` beside the API (anyone may read them; see the broker guide for what they
   * reveal). The broker keeps its metrics either way, for {@link Broker.metrics}.
   * @defaultValue `false`
   */
  metrics?: boolean;
  /**
   * What must be done before `/readyz` passes, such as caches syncing; a check that rejects keeps it failing.
   * @defaultValue none: ready at once
   */
  readiness?: Promise<unknown>[];
  /**
   * How long each step of an RDP console's start may take, in ms: the browser's RDCleanPath request, the TCP connect
   * to the guest, the guest's X.224 confirm and the TLS handshake with it. A step past it ends the console with an
   * error PDU. @defaultValue 10000
   */
  rdpHandshakeTimeoutMs?: number;
}

/** A broker's options, checked and with their defaults filled in. */
export interface ResolvedBrokerOptions {
  identity: IdentityProvider[];
  peerTokens: string[];
  vdi: Vdi;
  audit: ReadableAuditSink;
  namespaces: string[];
  admins: string[];
  adminGroups: string[];
  enabled: boolean;
  authRequired: boolean;
  metrics: boolean;
  readiness: Promise<unknown>[];
  /** How many desktops one user may hold, passed to every claim; `undefined` for no limit. */
  maxDesktopsPerUser: number | undefined;
  /** What the session engine takes besides the context and namespaces. */
  sessions: Pick<SessionEngineOptions, 'policy' | 'intervalMs'>;
  log: BrokerLogger;
  leaderElection: BrokerLeaderElection | undefined;
  caches: boolean;
  drainDelayMs: number;
  rdpHandshakeTimeoutMs: number | undefined;
}

const brokerOptionsSchema = z.object({
  identity: z.array(
    z.custom<IdentityProvider>(
      (value) => typeof (value as IdentityProvider | undefined)?.identify === 'function',
      { error: 'each identity provider needs an identify(request) function' },
    ),
  ),
  peerTokens: z.array(z.string().min(16, 'a peer token has at least 16 characters')).optional(),
  vdi: z.custom<Vdi>((value) => typeof (value as Vdi | undefined)?.claim === 'function').optional(),
  kubeConfig: z.unknown().optional(),
  clock: z.custom<Clock>((value) => typeof (value as Clock | undefined)?.now === 'function').optional(),
  intervalMs: z.int().positive().optional(),
  log: z.custom<BrokerLogger>((value) => typeof value === 'function').optional(),
  caches: z.boolean().optional(),
  metrics: z.boolean().optional(),
  readiness: z.array(z.custom<Promise<unknown>>((value) => value instanceof Promise)).optional(),
  enabled: z.boolean().optional(),
  namespaces: z.array(z.string()).min(1).optional(),
  admins: z.array(z.string().trim().min(1)).optional(),
  adminGroups: z.array(z.string().trim().min(1)).optional(),
  authRequired: z.boolean().optional(),
  disconnectGraceMs: z.int().min(0).optional(),
  maxSessionMs: z.int().min(0).optional(),
  leaderElection: z.object({}).loose().optional(),
  idleTimeoutMs: z.int().min(0).optional(),
  idleWarningMs: z.int().min(0).optional(),
  reclaimWarningMs: z.int().min(0).optional(),
  maxDesktopsPerUser: z.int().min(0).optional(),
  drainDelayMs: z.int().min(0).optional(),
  rdpHandshakeTimeoutMs: z.int().positive().optional(),
});

function isReadable(audit: AuditSink): audit is ReadableAuditSink {
  return typeof (audit as Partial<ReadableAuditSink>).list === 'function';
}

/**
 * Checks {@link createBroker}'s options and fills in their defaults, making the SDK instance when none is given.
 *
 * @throws `VdiError` `INVALID_INPUT` for bad options, an empty provider list, or a `vdi` whose audit sink cannot
 *   be read back.
 */
export function resolveBrokerOptions(options: BrokerOptions): ResolvedBrokerOptions {
  const parsed = parseOptions(brokerOptionsSchema, options, 'createBroker');
  if (parsed.identity.length === 0) {
    throw new VdiError(
      'INVALID_INPUT',
      'createBroker needs at least one identity provider, such as tailscaleIdentity({ trustHeaders: true }) or authGatewayIdentity().',
    );
  }
  const namespaces = [...new Set(parsed.namespaces ?? [parsed.vdi?.namespace ?? defaultNamespace])];
  const vdi =
    parsed.vdi ??
    createVdi({
      ...(options.kubeConfig ? { kubeConfig: options.kubeConfig } : {}),
      ...(parsed.clock ? { clock: parsed.clock } : {}),
      namespace: namespaces[0],
      audit: new MemoryAuditSink(),
    });
  if (!isReadable(vdi.audit)) {
    throw new VdiError(
      'INVALID_INPUT',
      'createBroker needs a vdi whose audit sink has list() for the task log; create it with audit: new MemoryAuditSink() or a sink of your own with list().',
    );
  }
  return {
    identity: parsed.identity,
    peerTokens: parsed.peerTokens ?? [],
    vdi,
    audit: vdi.audit,
    namespaces,
    admins: parsed.admins ?? [],
    adminGroups: parsed.adminGroups ?? [],
    enabled: parsed.enabled ?? true,
    authRequired: parsed.authRequired ?? false,
    // 0 is no limit
    maxDesktopsPerUser: parsed.maxDesktopsPerUser || undefined,
    sessions: {
      policy: {
        ...(parsed.disconnectGraceMs === undefined ? {} : { disconnectGraceMs: parsed.disconnectGraceMs }),
        ...(parsed.maxSessionMs === undefined ? {} : { maxSessionMs: parsed.maxSessionMs }),
        ...(parsed.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: parsed.idleTimeoutMs }),
        ...(parsed.idleWarningMs === undefined ? {} : { idleWarningMs: parsed.idleWarningMs }),
        ...(parsed.reclaimWarningMs === undefined ? {} : { reclaimWarningMs: parsed.reclaimWarningMs }),
      },
      ...(parsed.intervalMs === undefined ? {} : { intervalMs: parsed.intervalMs }),
    },
    metrics: parsed.metrics ?? false,
    readiness: parsed.readiness ?? [],
    log:
      parsed.log ??
      ((message, fields) => {
        if (fields?.level !== 'info') console.warn(message);
      }),
    leaderElection: options.leaderElection,
    caches: parsed.caches ?? false,
    drainDelayMs: parsed.drainDelayMs ?? defaultDrainDelayMs,
    rdpHandshakeTimeoutMs: parsed.rdpHandshakeTimeoutMs,
  };
}
