import { z } from 'zod';
import { type AuditRecord, type AuditSink, MemoryAuditSink } from '../audit.js';
import type { Clock } from '../clock.js';
import { VdiError } from '../errors.js';
import type { SessionEngineOptions } from '../sessions/session-engine.js';
import { parseOptions } from '../validate.js';
import { createVdi, defaultNamespace, type KubeConfig, type Vdi } from '../vdi.js';
import type { BrokerSettings } from './broker-settings.js';
import type { IdentityProvider } from './identity.js';

/** An audit sink the broker can read back for `GET /api/tasklog`. @category broker */
export interface ReadableAuditSink extends AuditSink {
  /** The kept records, oldest first. */
  list(): AuditRecord[] | Promise<AuditRecord[]>;
}

/** Receives the broker's warnings and unexpected errors, one line each. @category broker */
export type BrokerLogger = (message: string) => void;

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
  /** Where warnings go (open mode, unexpected errors). @defaultValue `console.warn` */
  log?: BrokerLogger;
}

/** A broker's options, checked and with their defaults filled in. */
export interface ResolvedBrokerOptions {
  identity: IdentityProvider[];
  peerTokens: string[];
  vdi: Vdi;
  audit: ReadableAuditSink;
  namespaces: string[];
  admins: string[];
  enabled: boolean;
  authRequired: boolean;
  /** What the session engine takes besides the context and namespaces. */
  sessions: Pick<SessionEngineOptions, 'policy' | 'intervalMs'>;
  log: BrokerLogger;
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
  enabled: z.boolean().optional(),
  namespaces: z.array(z.string()).min(1).optional(),
  admins: z.array(z.string().trim().min(1)).optional(),
  authRequired: z.boolean().optional(),
  disconnectGraceMs: z.int().min(0).optional(),
  maxSessionMs: z.int().min(0).optional(),
  idleTimeoutMs: z.int().min(0).optional(),
  idleWarningMs: z.int().min(0).optional(),
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
    enabled: parsed.enabled ?? true,
    authRequired: parsed.authRequired ?? false,
    sessions: {
      policy: {
        ...(parsed.disconnectGraceMs === undefined ? {} : { disconnectGraceMs: parsed.disconnectGraceMs }),
        ...(parsed.maxSessionMs === undefined ? {} : { maxSessionMs: parsed.maxSessionMs }),
        ...(parsed.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: parsed.idleTimeoutMs }),
        ...(parsed.idleWarningMs === undefined ? {} : { idleWarningMs: parsed.idleWarningMs }),
      },
      ...(parsed.intervalMs === undefined ? {} : { intervalMs: parsed.intervalMs }),
    },
    log: parsed.log ?? ((message: string) => console.warn(message)),
  };
}
