// zod/mini, not zod: the browser client checks answers with these, and a page should not carry all of zod.
import * as z from 'zod/mini';
import { httpStatusByCode, type VdiErrorCode } from '../errors.js';

/** The schemas that become the OpenAPI document's components, by ID. */
export const componentRegistry = z.registry<{ id: string; description?: string }>();

const timestamp = (description: string) =>
  z.string().register(z.globalRegistry, { format: 'date-time', description });
const nullableTimestamp = (description: string) => z.nullable(timestamp(description));

const errorCodes = Object.keys(httpStatusByCode) as [VdiErrorCode, ...VdiErrorCode[]];

/** Every error answer: a code programs switch on and a message for people. @category broker */
export const errorBodySchema = z
  .object({
    error: z.object({
      code: z.enum(errorCodes),
      message: z.string().register(z.globalRegistry, { description: 'What went wrong and what to do next.' }),
    }),
  })
  .register(componentRegistry, { id: 'Error', description: 'An error answer.' });

/** Where a pool's schedule stands, in a pool answer. @category broker */
export const poolScheduleSchema = z
  .object({
    timeZone: z.string(),
    period: z.nullable(z.string()).register(z.globalRegistry, {
      description:
        'The period in force; `null` outside every period, where the plain size and `minReady` hold.',
    }),
    warmingFor: z.nullable(z.string()).register(z.globalRegistry, {
      description: 'A period starting within the lead time that the pool is warmed ahead for now.',
    }),
    nextChange: z.nullable(
      z.object({ at: timestamp('When the period changes next.'), period: z.nullable(z.string()) }),
    ),
    targets: z.object({
      size: z.int().check(z.gte(0)),
      freeRunning: z.int().check(z.gte(0)),
    }),
    scaleToZero: z.boolean().register(z.globalRegistry, {
      description: 'Whether the period in force lets the free running members go down to none.',
    }),
    plainSize: z.int().check(z.gte(0)),
    failing: z.nullable(
      z.object({
        attempts: z.int().check(z.gte(1)),
        retryAt: timestamp('When the keeper tries the pool again.'),
      }),
    ),
  })
  .register(componentRegistry, { id: 'PoolSchedule', description: "Where a pool's schedule stands." });

/** Where a pool's roll-out to a new golden VM stands, in a pool answer. @category broker */
export const poolRolloutSchema = z
  .object({
    to: z.string().register(z.globalRegistry, { description: 'The golden VM the pool moves to.' }),
    onTarget: z.int().check(z.gte(0)),
    total: z.int().check(z.gte(0)),
    maxUnavailable: z.int().check(z.gte(1)),
    paused: z.boolean(),
    deadline: nullableTimestamp(
      'When claimed members not yet rebuilt are reclaimed; `null` to wait for releases.',
    ),
    finishedAt: nullableTimestamp('When every member was on `to`; `null` while under way.'),
    rebuilding: z.int().check(z.gte(0)),
    waiting: z.int().check(z.gte(0)).register(z.globalRegistry, {
      description: 'Claimed members on an older golden VM, waiting for their release or the deadline.',
    }),
  })
  .register(componentRegistry, { id: 'PoolRollout', description: "Where a pool's roll-out stands." });

/** A pool the broker serves, with its counts. @category broker */
export const poolSchema = z
  .object({
    id: z.string().register(z.globalRegistry, {
      description: 'The pool ID, `vm/<namespace>/<pool>`.',
      examples: ['vm/corral-vms/devpool'],
    }),
    kind: z.enum(['vm', 'ct']),
    namespace: z.string(),
    name: z.string(),
    members: z.int().check(z.gte(0)),
    claimed: z.int().check(z.gte(0)).register(z.globalRegistry, {
      description: 'Members someone holds, including assignments from before Leases.',
    }),
    free: z.int().check(z.gte(0)),
    schedule: z.nullable(poolScheduleSchema).register(z.globalRegistry, {
      description: 'Where its schedule stands; `null` for a pool without one.',
    }),
    rollOut: z.nullable(poolRolloutSchema).register(z.globalRegistry, {
      description:
        'Where its latest roll-out stands (kept once finished); `null` for a pool that has had none.',
    }),
  })
  .register(componentRegistry, { id: 'Pool', description: 'A pool of desktops.' });

/** The answer of `GET /api/vdi/pools`. @category broker */
export const poolListSchema = z
  .object({ pools: z.array(poolSchema) })
  .register(componentRegistry, { id: 'PoolList', description: 'The served pools.' });

/** One desktop with its claim and its session. @category broker */
export const desktopSchema = z
  .object({
    id: z.string().register(z.globalRegistry, {
      description: 'The desktop ID, `vm/<namespace>/<member>`; it stays the same across claims.',
      examples: ['vm/corral-vms/devpool-1'],
    }),
    kind: z.enum(['vm', 'ct']),
    namespace: z.string(),
    member: z.string(),
    pool: z.string(),
    poolId: z.string(),
    owner: z
      .nullable(z.string())
      .register(z.globalRegistry, { description: 'The holder, or null when nobody holds it.' }),
    sessionId: z
      .nullable(z.string())
      .register(z.globalRegistry, { description: 'Changes with every claim of the member.' }),
    claimedAt: nullableTimestamp('When the claim began.'),
    expiresAt: nullableTimestamp(
      'When the claim ends unless renewed; the broker renews claims while it runs.',
    ),
    legacy: z
      .boolean()
      .register(z.globalRegistry, { description: 'An assignment from before claims had Leases.' }),
    phase: z.string().register(z.globalRegistry, {
      description: "KubeVirt's printable status, such as Running or Stopped.",
    }),
    running: z.boolean(),
    ephemeral: z
      .boolean()
      .register(z.globalRegistry, { description: 'A release recreates the member from its golden VM.' }),
    connected: z
      .boolean()
      .register(z.globalRegistry, { description: 'A console of the desktop is open through this broker.' }),
    disconnectedAt: nullableTimestamp('When the disconnect grace began.'),
    reclaimAt: nullableTimestamp('When the reclaim policy takes the desktop back unless something changes.'),
    reclaimReason: z.nullable(
      z.enum(['disconnect-grace', 'max-duration', 'idle', 'not-entitled', 'roll-out']),
    ),
    idleWarning: z.optional(z.boolean()).register(z.globalRegistry, {
      description:
        'Present and true while the desktop is about to be reclaimed as idle: input on a console keeps it.',
    }),
    reclaimWarning: z.optional(z.boolean()).register(z.globalRegistry, {
      description:
        'Present and true while the holder is warned of the reclaim at `reclaimAt` for `reclaimReason` (idle, max-duration or roll-out).',
    }),
    reclaimInMs: z.optional(z.int()).register(z.globalRegistry, {
      description:
        "With `reclaimWarning`: the milliseconds left until `reclaimAt` by the broker's clock when it answered, for a countdown that a wrong clock on the caller's side does not skew.",
    }),
  })
  .register(componentRegistry, { id: 'Desktop', description: 'A pool member as its holder sees it.' });

/** The answer of a claim: the caller's desktop. @category broker */
export const claimedDesktopSchema = z
  .extend(desktopSchema, {
    owner: z.string(),
    sessionId: z.string(),
    retried: z.boolean().register(z.globalRegistry, {
      description: 'The caller already held this desktop; the same session goes on.',
    }),
    adopted: z
      .boolean()
      .register(z.globalRegistry, { description: 'The claim took over an assignment of the same login.' }),
    warm: z.boolean().register(z.globalRegistry, {
      description: 'The desktop was already running when claimed (a warm spare): no start to wait for.',
    }),
    startError: z.optional(z.string()).register(z.globalRegistry, {
      description: 'Set when the desktop is claimed but did not start; start it again later.',
    }),
  })
  .register(componentRegistry, { id: 'ClaimedDesktop', description: "The caller's claimed desktop." });

/** A claim waiting in a pool's queue, as the broker tracks it. @category broker */
export const waiterSchema = z
  .object({
    id: z.string().register(z.globalRegistry, {
      description: 'The waiter ID, `<kind>/<namespace>/<pool>/<key>`; poll GET /api/vdi/waiters/{id}.',
      examples: ['vm/corral-vms/devpool/0k3j5x9a2b'],
    }),
    poolId: z.string(),
    status: z.enum(['waiting', 'claimed', 'cancelled', 'timed-out', 'failed']).register(z.globalRegistry, {
      description: '`claimed` carries the desktop; `timed-out`, `cancelled` and `failed` carry the error.',
    }),
    position: z.nullable(z.int().check(z.gte(1))).register(z.globalRegistry, {
      description: 'The place in the queue, 1 being next; null when not waiting.',
    }),
    waiters: z
      .nullable(z.int().check(z.gte(1)))
      .register(z.globalRegistry, { description: 'How many wait in the pool, this one included.' }),
    enqueuedAt: nullableTimestamp('When the caller joined the queue.'),
    desktop: z.nullable(claimedDesktopSchema),
    error: z.nullable(errorBodySchema.shape.error),
  })
  .register(componentRegistry, { id: 'Waiter', description: "A claim waiting in a pool's queue." });

/** The answer of `GET /api/vdi/desktops`. @category broker */
export const desktopListSchema = z
  .object({ desktops: z.array(desktopSchema) })
  .register(componentRegistry, { id: 'DesktopList', description: 'Desktops.' });

/** The answer of a release: the task that carries it out. @category broker */
export const releaseAcceptedSchema = z
  .object({
    desktop: z.string().register(z.globalRegistry, { examples: ['vm/corral-vms/devpool-1'] }),
    task: z.string().register(z.globalRegistry, { description: 'Poll GET /api/tasks/{id} for the outcome.' }),
  })
  .register(componentRegistry, { id: 'ReleaseAccepted', description: 'A release in progress.' });

/** A broker task, such as a release. @category broker */
export const taskSchema = z
  .object({
    id: z.string(),
    action: z.enum(['vdi release', 'vdi force-release']),
    desktop: z.string(),
    user: z.string().register(z.globalRegistry, { description: 'Who asked for it.' }),
    status: z.enum(['running', 'done', 'error']),
    startedAt: timestamp('When the task began.'),
    finishedAt: nullableTimestamp('When it ended.'),
    error: z.nullable(errorBodySchema.shape.error),
  })
  .register(componentRegistry, { id: 'Task', description: 'Work the broker does after answering.' });

/** One task log record. @category broker */
export const auditRecordSchema = z
  .object({
    at: timestamp('When it happened.'),
    action: z.string().register(z.globalRegistry, {
      examples: ['vdi claim', 'vdi start', 'vdi release', 'vdi force-release'],
    }),
    user: z.string(),
    target: z.string().register(z.globalRegistry, {
      description: 'The desktop or pool ID; a force-release also names the holder.',
    }),
    status: z.enum(['ok', 'error']),
    error: z.optional(z.string()),
  })
  .register(componentRegistry, { id: 'AuditRecord', description: 'A task log record.' });

/** The answer of `GET /api/tasklog`. @category broker */
export const taskLogSchema = z
  .object({ records: z.array(auditRecordSchema) })
  .register(componentRegistry, { id: 'TaskLog', description: 'Task log records, oldest first.' });

const connectOptionSchema = z
  .discriminatedUnion('protocol', [
    z.object({ protocol: z.literal('rdp'), host: z.string(), port: z.int() }),
    z.object({ protocol: z.literal('vnc'), namespace: z.string(), vm: z.string() }),
    z.object({ protocol: z.literal('serial'), namespace: z.string(), vm: z.string() }),
    z.object({ protocol: z.literal('terminal'), namespace: z.string(), pod: z.string(), shell: z.string() }),
  ])
  .register(componentRegistry, { id: 'ConnectOption', description: 'A console on offer.' });

const protocolSchema = z.enum(['rdp', 'vnc', 'serial', 'terminal']);

/** The answer of a connect: the console to use, the fallbacks and why others were skipped. @category broker */
export const connectAnswerSchema = z
  .object({
    desktopId: z.string(),
    namespace: z.string(),
    member: z.string(),
    holder: z.string(),
    target: connectOptionSchema,
    fallbacks: z.array(connectOptionSchema),
    skipped: z.array(z.object({ protocol: protocolSchema, reason: z.string() })),
    launches: z
      .array(z.object({ protocol: protocolSchema, argv: z.array(z.string()).check(z.minLength(1)) }))
      .register(z.globalRegistry, {
        description: 'The command for the target, then for each fallback, as argv arrays.',
      }),
  })
  .register(componentRegistry, { id: 'ConnectAnswer', description: 'How to reach a desktop.' });

/** The answer of `/healthz` and of a ready `/readyz`. @category broker */
/** The proxy token of an RDP console, minted for the caller right before the browser opens it. @category broker */
export const rdpTokenSchema = z
  .object({
    token: z.string().register(z.globalRegistry, {
      description: "The RDCleanPath request's proxy_auth: single use, for this caller and this claim only.",
    }),
    expiresAt: z.string().register(z.globalRegistry, {
      description: 'When the token stops being accepted (RFC 3339), a minute after it was minted.',
    }),
    destination: z.string().register(z.globalRegistry, {
      description:
        "The guest's address as `ip:3389`, for the request's destination; the broker connects there whatever the request says.",
    }),
  })
  .register(componentRegistry, {
    id: 'RdpToken',
    description: 'What a browser RDP client (IronRDP) needs to open the rdp console websocket.',
  });

export const probeAnswerSchema = z
  .object({ status: z.enum(['alive', 'ready']) })
  .register(componentRegistry, {
    id: 'ProbeAnswer',
    description: 'A health or readiness probe that passed.',
  });

/** An RDP proxy token as the API answers it. @category broker */
export type RdpTokenBody = z.infer<typeof rdpTokenSchema>;
/** A desktop as the API answers it. @category broker */
export type DesktopBody = z.infer<typeof desktopSchema>;
/** A claim as the API answers it. @category broker */
export type ClaimedDesktopBody = z.infer<typeof claimedDesktopSchema>;
/** A pool as the API answers it. @category broker */
export type PoolBody = z.infer<typeof poolSchema>;
/** A task as the API answers it. @category broker */
export type TaskBody = z.infer<typeof taskSchema>;
/** A waiter as the API answers it. @category broker */
export type WaiterBody = z.infer<typeof waiterSchema>;
/** A connect answer as the API answers it. @category broker */
export type ConnectAnswerBody = z.infer<typeof connectAnswerSchema>;
