import * as z from 'zod/mini';
import type { VdiErrorCode } from '../errors.js';
import { type DesktopKind, parseDesktopId as parseDesktopIdParts } from '../ids.js';
import {
  dnsLabelPattern,
  maxNamespaceLength,
  maxPoolNameLength,
  maxSubdomainLength,
  subdomainPattern,
} from '../validate.js';
import { componentRegistry } from './schemas.js';

// The broker's request rules: names follow src/validate.ts's patterns, with messages that quote the path.

const taskIdPattern = /^[a-z0-9]([-.a-z0-9]{0,398}[a-z0-9])?$/;

// A message that quotes the refused value first, as every path-parameter message does.
const refusing = (rest: string) => ({
  error: (issue: { input?: unknown }) => `"${String(issue.input)}" ${rest}`,
});

const notKind = refusing('is not a desktop kind; use "vm" or "ct", as in vm/corral-vms/devpool.');
const notNamespace = refusing('is not a valid namespace name (a DNS-1123 label such as corral-vms).');
const notPool = refusing(
  `is not a valid pool name; use 1 to ${maxPoolNameLength} lowercase letters, digits and "-", such as devpool.`,
);
const notMember = refusing('is not a valid member name; use a member name such as devpool-1.');
const notTaskId = refusing('is not a task ID; use the ID a release answered with.');

/** The `{kind}` of a pool or desktop path: `vm` (KubeVirt VMs) or `ct` (containers). */
export const kindParam = z
  .enum(['vm', 'ct'], notKind)
  .register(z.globalRegistry, { description: 'The backend: `vm` for a VM pool, `ct` for a container pool.' });

/** The `{ns}` of a path: a namespace name. Whether the broker serves it is checked by {@link checkParams}. */
export const namespaceParam = z
  .string()
  .check(z.maxLength(maxNamespaceLength, notNamespace), z.regex(dnsLabelPattern, notNamespace))
  .register(z.globalRegistry, { description: 'A namespace the broker serves.' });

/** The `{pool}` of a claim path. */
export const poolParam = z
  .string()
  .check(z.maxLength(maxPoolNameLength, notPool), z.regex(dnsLabelPattern, notPool))
  .register(z.globalRegistry, { description: 'The pool name.' });

/** The `{member}` of a desktop path: a VM or Pod name. */
export const memberParam = z
  .string()
  .check(z.maxLength(maxSubdomainLength, notMember), z.regex(subdomainPattern, notMember))
  .register(z.globalRegistry, { description: 'The member VM, such as devpool-1.' });

/** The `{id}` of a task path. */
export const taskIdParam = z
  .string()
  .check(z.regex(taskIdPattern, notTaskId))
  .register(z.globalRegistry, { description: 'The task ID a release answered with.' });

/** The `{protocol}` of a console path: which console of the desktop the websocket carries. */
export const consoleProtocolParam = z
  .enum(['vnc', 'serial', 'rdp', 'terminal'], {
    error: (issue: { input?: unknown }) =>
      `"${String(issue.input)}" is not a console; use vnc, serial or rdp (a VM), or terminal (a container).`,
  })
  .register(z.globalRegistry, {
    description:
      '`vnc`, `serial` or `rdp` (RDCleanPath, with a token from `POST …/console/rdp/token`) for a VM; `terminal` for a container desktop.',
  });

/** The largest request body the broker reads; its POST routes take nothing that needs more. */
export const maxBodyBytes = 16 * 1024;

/** The optional body of the POST routes. The broker takes nothing from it, least of all an identity. */
export const actionBodySchema = z
  .looseObject({}, { error: 'The request body must be a JSON object (its fields are ignored).' })
  .register(componentRegistry, {
    id: 'ActionBody',
    description: 'Optional. Any JSON object; its fields are ignored, so a body never names the caller.',
  });

/** The longest wait the broker lets a claim ask for: an hour. */
export const maxBrokerWaitMs = 3600_000;
/** How long a broker claim waits when its body names no `waitTimeoutMs`: ten minutes. */
export const defaultBrokerWaitMs = 600_000;

/** The optional body of a claim: `wait` queues the caller when no member is free. */
export const claimBodySchema = z
  .object(
    {
      wait: z.optional(z.boolean({ error: 'wait takes true or false.' })).register(z.globalRegistry, {
        description:
          "When no member is free, join the pool's queue: the answer is 202 with a waiter to poll.",
      }),
      waitTimeoutMs: z
        .optional(
          z.int({ error: 'waitTimeoutMs takes a whole number of milliseconds.' }).check(
            z.positive({ error: 'waitTimeoutMs must be more than 0.' }),
            z.lte(maxBrokerWaitMs, {
              error: `waitTimeoutMs must be at most ${maxBrokerWaitMs} (an hour).`,
            }),
          ),
        )
        .register(z.globalRegistry, {
          description: `How long to wait, with wait: true; ${defaultBrokerWaitMs} (ten minutes) unless given.`,
        }),
    },
    { error: 'The request body must be a JSON object.' },
  )
  .check(
    z.refine((body) => body.wait === true || body.waitTimeoutMs === undefined, {
      error: 'waitTimeoutMs needs wait: true.',
    }),
  )
  .register(componentRegistry, {
    id: 'ClaimBody',
    description:
      'Optional. `{ "wait": true }` queues the caller when no member is free; other fields are ignored.',
  });

const notWaiter = refusing('is not a waiter key; use the waiter ID a claim with wait answered with.');

/** The `{waiter}` of a waiter path: the key a claim with `wait` answered in its waiter ID. */
export const waiterParam = z
  .string()
  .check(z.regex(/^[0-9a-z]{10}$/, notWaiter))
  .register(z.globalRegistry, {
    description: 'The last part of the waiter ID a claim with wait answered with.',
  });

/** The query of `GET /api/vdi/desktops`. */
export const desktopListQuerySchema = z.object({
  all: z
    .optional(z.enum(['0', '1'], { error: 'The query parameter all takes 1 (every user) or 0 (yours).' }))
    .register(z.globalRegistry, { description: "`1` lists every user's desktops (admins only)." }),
});

/** A refusal of a request's input, with the error code it answers with. */
export interface InputRejection {
  code: VdiErrorCode;
  message: string;
}

/** Checks one value against a rule; a refusal carries the first problem and its code (default `INVALID_INPUT`). */
export function checkInput<T>(
  schema: z.ZodMiniType<T>,
  value: unknown,
): { ok: true; value: T } | ({ ok: false } & InputRejection) {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const [issue] = parsed.error.issues;
  const code = issue?.code === 'custom' ? (issue.params?.code as VdiErrorCode | undefined) : undefined;
  return { ok: false, code: code ?? 'INVALID_INPUT', message: issue?.message ?? 'The input is not valid.' };
}

/**
 * Checks path parameters in the order of `values` (the path's), so the first bad one names the problem. A namespace the broker does not
 * serve answers as if it did not exist.
 */
export function checkParams(
  rules: Readonly<Record<string, z.ZodMiniType<string>>>,
  values: Readonly<Record<string, string>>,
  servedNamespaces: readonly string[],
): { ok: true; params: Record<string, string> } | ({ ok: false } & InputRejection) {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) {
    const rule = rules[name];
    // a parameter without a rule is refused, never passed on unchecked
    const checked = checkInput(rule ?? z.never(), value);
    if (!checked.ok) return checked;
    if (rule === namespaceParam && !servedNamespaces.includes(checked.value)) {
      return {
        ok: false,
        code: 'NOT_FOUND',
        message: `Namespace "${checked.value}" has no pools this broker serves.`,
      };
    }
    params[name] = checked.value;
  }
  return { ok: true, params };
}

/** What {@link parseDesktopId} decided. @category broker */
export type DesktopIdMatch =
  | { kind: 'desktop'; desktopKind: DesktopKind; namespace: string; member: string }
  | { kind: 'reject'; code: VdiErrorCode; message: string };

/**
 * Parses and checks a desktop ID `<kind>/<namespace>/<member>` by the same rules as the routes' path parameters.
 *
 * @example
 * ```ts
 * parseDesktopId('vm/corral-vms/devpool-1', ['corral-vms']); // { kind: 'desktop', desktopKind: 'vm', namespace: 'corral-vms', member: 'devpool-1' }
 * ```
 */
export function parseDesktopId(id: string, servedNamespaces: readonly string[]): DesktopIdMatch {
  let ref: ReturnType<typeof parseDesktopIdParts>;
  try {
    ref = parseDesktopIdParts(id);
  } catch (error) {
    return { kind: 'reject', code: 'INVALID_INPUT', message: (error as Error).message };
  }
  const checked = checkParams(
    { kind: kindParam, ns: namespaceParam },
    { kind: ref.kind, ns: ref.namespace },
    servedNamespaces,
  );
  return checked.ok
    ? { kind: 'desktop', desktopKind: ref.kind, namespace: ref.namespace, member: ref.member }
    : { kind: 'reject', code: checked.code, message: checked.message };
}
