import { z } from 'zod';
import { VdiError } from '../errors.js';
import { parseDuration } from '../parse-duration.js';
import { dnsLabelPattern, maxNamespaceLength } from '../validate.js';
import { defaultNamespace } from '../vdi.js';

/**
 * The broker's settings that can come from the environment. Every field is optional in code; the defaults are
 * those of {@link brokerOptionsFromEnv}.
 *
 * @category broker
 */
export interface BrokerSettings {
  /** Whether the broker answers at all; when off, every `/api/vdi/` route answers 404. */
  enabled?: boolean;
  /** The namespaces whose pools the broker serves; pool labels elsewhere are ignored. */
  namespaces?: string[];
  /** The admin allowlist (exact logins). Empty, and no admin groups: open mode, where every caller is an admin. */
  admins?: string[];
  /** The groups whose members are admins, as the identity provider names them (exact names). */
  adminGroups?: string[];
  /** Refuse anonymous callers on every `/api` route the broker sees, not only on its own. */
  authRequired?: boolean;
  /** How long a desktop stays claimed after its last console closes, in ms; `0` turns this reclaim off. */
  disconnectGraceMs?: number;
  /** The maximum age of a claim in ms; `0` means no maximum. */
  maxSessionMs?: number;
  /**
   * How long a desktop connected through the broker's consoles may carry no key, pointer or terminal input before
   * it is reclaimed, in ms; `0` turns idle reclaim off. A pool's own idle timeout overrides it.
   */
  idleTimeoutMs?: number;
  /** How long before an idle reclaim its holder is warned (an event and a banner), in ms; `0` sends none. */
  idleWarningMs?: number;
  /**
   * How long before a reclaim for the maximum age its holder is warned (an event, the pool's webhook and a banner),
   * in ms; `0` sends none.
   */
  reclaimWarningMs?: number;
  /**
   * How many desktops one user may hold in all served pools of a namespace together; `0` sets no limit. A pool's
   * own `maxDesktopsPerUser` may be lower.
   */
  maxDesktopsPerUser?: number;
  /**
   * How long a SIGTERM leaves the broker serving, with `/readyz` failing, before it shuts down, in ms: time for
   * the platform to stop routing to it (endpoint removal reaches kube-proxy and ingresses a moment after a Pod
   * begins to terminate). See {@link Broker.drain}.
   */
  drainDelayMs?: number;
}

/**
 * The drain delay unless told otherwise: endpoint removal reaches kube-proxy and ingress controllers within a
 * second or two on a healthy cluster, and 5 s of drain plus the 20 s shutdown bound stay inside Kubernetes'
 * default 30 s grace period.
 */
export const defaultDrainDelayMs = 5_000;

/** The environment variables {@link brokerOptionsFromEnv} reads. @category broker */
export const brokerEnvironmentVariables = [
  'CORRAL_VDI_BROKER',
  'CORRAL_VDI_NAMESPACES',
  'CORRAL_ADMINS',
  'CORRAL_ADMIN_GROUPS',
  'CORRAL_AUTH_REQUIRED',
  'CORRAL_VDI_DISCONNECT_GRACE',
  'CORRAL_VDI_MAX_SESSION',
  'CORRAL_VDI_IDLE_TIMEOUT',
  'CORRAL_VDI_IDLE_WARNING',
  'CORRAL_VDI_RECLAIM_WARNING',
  'CORRAL_MAX_DESKTOPS_PER_USER',
  'CORRAL_VDI_DRAIN_DELAY',
] as const;

type BrokerEnvironmentVariable = (typeof brokerEnvironmentVariables)[number];

const switchValue = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['', '0', '1', 'false', 'true', 'off', 'on', 'no', 'yes'], { error: 'use 1 (on) or 0 (off)' }))
  .transform((value) => value === '1' || value === 'true' || value === 'on' || value === 'yes');

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

const namespaceList = commaList.pipe(
  z.array(
    z
      .string()
      .max(maxNamespaceLength, `a namespace name has at most ${maxNamespaceLength} characters`)
      .regex(dnsLabelPattern, 'a namespace name is a DNS-1123 label such as corral-vms'),
  ),
);

const duration = z.string().transform((value, context) => {
  try {
    return parseDuration(value.trim());
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const count = z
  .string()
  .trim()
  .regex(/^\d+$/, 'use a whole number of 1 or more, or 0 for no limit')
  .transform(Number)
  .pipe(z.number().int().max(Number.MAX_SAFE_INTEGER, 'use a smaller number'));

const parsers: Record<BrokerEnvironmentVariable, z.ZodType<unknown, string>> = {
  CORRAL_VDI_BROKER: switchValue,
  CORRAL_VDI_NAMESPACES: namespaceList,
  CORRAL_ADMINS: commaList,
  CORRAL_ADMIN_GROUPS: commaList,
  CORRAL_AUTH_REQUIRED: switchValue,
  CORRAL_VDI_DISCONNECT_GRACE: duration,
  CORRAL_VDI_MAX_SESSION: duration,
  CORRAL_VDI_IDLE_TIMEOUT: duration,
  CORRAL_VDI_IDLE_WARNING: duration,
  CORRAL_VDI_RECLAIM_WARNING: duration,
  CORRAL_MAX_DESKTOPS_PER_USER: count,
  CORRAL_VDI_DRAIN_DELAY: duration,
};

/**
 * Reads the broker's settings from environment variables, validating each one:
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | `CORRAL_VDI_BROKER` | `1` turns the broker on | off: every `/api/vdi/` route answers 404 |
 * | `CORRAL_VDI_NAMESPACES` | comma-separated namespaces to serve | `corral-vms` |
 * | `CORRAL_ADMINS` | comma-separated admin logins | none |
 * | `CORRAL_ADMIN_GROUPS` | comma-separated groups whose members are admins | none; with no admins either: open mode |
 * | `CORRAL_AUTH_REQUIRED` | `1` refuses anonymous callers on every `/api` route | off |
 * | `CORRAL_VDI_DISCONNECT_GRACE` | grace after the last console closes (`15m`; `0` off) | `15m` |
 * | `CORRAL_VDI_MAX_SESSION` | maximum claim age (`8h`; `0` none) | `0` |
 * | `CORRAL_VDI_IDLE_TIMEOUT` | reclaim a desktop whose broker consoles carried no input this long (`30m`; `0` off) | `0` |
 * | `CORRAL_VDI_IDLE_WARNING` | warn this long before an idle reclaim (`5m`; `0` none) | `5m` |
 * | `CORRAL_VDI_RECLAIM_WARNING` | warn this long before a reclaim for the maximum age (`5m`; `0` none) | `5m` |
 * | `CORRAL_MAX_DESKTOPS_PER_USER` | how many desktops one user may hold in a namespace (`2`; `0` none) | `0` |
 * | `CORRAL_VDI_DRAIN_DELAY` | keep serving this long after SIGTERM while `/readyz` fails (`10s`; `0` none) | `5s` |
 *
 * An unset or empty variable takes its default.
 *
 * @example
 * ```ts
 * const broker = createBroker({
 *   ...brokerOptionsFromEnv(process.env),
 *   identity: [tailscaleIdentity({ trustHeaders: true })],
 * });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` whose message names the variable and says what it takes.
 * @category broker
 */
export function brokerOptionsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): Required<BrokerSettings> {
  const read = <T>(name: BrokerEnvironmentVariable, fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const parsed = parsers[name].safeParse(raw);
    if (parsed.success) return parsed.data as T;
    const reasons = parsed.error.issues.map((issue) => issue.message.replace(/\.$/, '')).join('; ');
    throw new VdiError('INVALID_INPUT', `${name}="${raw}" is not valid: ${reasons}.`, {
      details: { variable: name },
    });
  };
  const namespaces = read<string[]>('CORRAL_VDI_NAMESPACES', []);
  return {
    enabled: read('CORRAL_VDI_BROKER', false),
    namespaces: namespaces.length > 0 ? namespaces : [defaultNamespace],
    admins: read('CORRAL_ADMINS', []),
    adminGroups: read('CORRAL_ADMIN_GROUPS', []),
    authRequired: read('CORRAL_AUTH_REQUIRED', false),
    disconnectGraceMs: read('CORRAL_VDI_DISCONNECT_GRACE', 15 * 60_000),
    maxSessionMs: read('CORRAL_VDI_MAX_SESSION', 0),
    idleTimeoutMs: read('CORRAL_VDI_IDLE_TIMEOUT', 0),
    idleWarningMs: read('CORRAL_VDI_IDLE_WARNING', 5 * 60_000),
    reclaimWarningMs: read('CORRAL_VDI_RECLAIM_WARNING', 5 * 60_000),
    maxDesktopsPerUser: read('CORRAL_MAX_DESKTOPS_PER_USER', 0),
    drainDelayMs: read('CORRAL_VDI_DRAIN_DELAY', defaultDrainDelayMs),
  };
}
