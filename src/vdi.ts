import { randomUUID } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { EventEmitter } from 'eventemitter3';
import { z } from 'zod';
import { type AuditSink, MemoryAuditSink } from './audit.js';
import { type ClaimsService, createClaimsService, parseOptions } from './claims/claims-service.js';
import type { Clock } from './clock.js';
import type { VdiContext } from './context.js';
import type { VdiEvents } from './events.js';
import { KubeCluster } from './kube/cluster.js';
import type { RetryOptions } from './kube/retry.js';

/** The namespace used when neither the call nor `createVdi` names one. @category configuration */
export const defaultNamespace = 'corral-vms';

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
}

/** The SDK: every primitive, bound to one cluster. @category configuration */
export interface Vdi extends ClaimsService {
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
    newSessionId: randomUUID,
  };
  return {
    ...createClaimsService(context),
    events,
    audit: context.audit,
    namespace: context.defaultNamespace,
    context,
  };
}
