import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { type AuditRecord, type AuditSink, MemoryAuditSink } from '../audit.js';
import { parseOptions } from '../claims/claims-service.js';
import { classifyMember } from '../claims/classify-member.js';
import { type DesktopView, toDesktopView } from '../claims/desktop-view.js';
import { leaseNameFor } from '../claims/lease-name.js';
import type { Clock } from '../clock.js';
import { checkDesktopAccess } from '../connect-planner/check-desktop-access.js';
import { connect } from '../connect-planner/connect.js';
import { httpStatusByCode, isVdiError, VdiError, type VdiErrorCode } from '../errors.js';
import { leasePoolLabel, poolLabel } from '../keys.js';
import type { LeaseObject } from '../kubevirt-types.js';
import { listPools } from '../pools/pool-service.js';
import {
  type ConsoleHandle,
  type ConsoleKind,
  createSessionEngine,
  type DesktopSession,
  type SessionEngine,
} from '../sessions/session-engine.js';
import { createVdi, defaultNamespace, type Vdi } from '../vdi.js';
import type { BrokerSettings } from './broker-settings.js';
import {
  type BrokerRequest,
  type BrokerResponse,
  headersOfNode,
  maxBodyBytes,
  readNodeBody,
  readWebBody,
  splitTarget,
  writeNodeResponse,
} from './http-io.js';
import { type CallerIdentity, createIdentityResolver, type IdentityProvider } from './identity.js';
import { type BrokerRoute, matchRoute, parseDesktopId } from './match-route.js';
import { buildOpenApiDocument } from './openapi.js';
import {
  actionBodySchema,
  claimedDesktopSchema,
  connectAnswerSchema,
  desktopListQuerySchema,
  desktopListSchema,
  desktopSchema,
  poolListSchema,
  releaseAcceptedSchema,
  taskLogSchema,
  taskSchema,
} from './schemas.js';
import { createTaskRegistry } from './tasks.js';

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

/** Options of {@link Broker.authorizeConsole}. @category broker */
export interface AuthorizeConsoleOptions {
  /** `vm/<namespace>/<member>`. */
  desktopId: string;
  /** The caller's login, as {@link Broker.identify} found it. */
  identity: string;
  /** Which console the caller opens. */
  kind: ConsoleKind;
}

/** Extra facts a fetch-style server knows about a request. @category broker */
export interface FetchInfo {
  /** The TCP peer's address, for {@link authGatewayIdentity}'s `trustedProxies`. */
  remoteAddress?: string;
}

/** The self-service broker: the `/api/vdi` routes, the task routes and the console gate. @category broker */
export interface Broker {
  /**
   * A node:http listener (also Express and Connect middleware). With `next`, a request for a path that is not
   * the broker's goes on to `next` (after the anonymous check of `authRequired` for other `/api` paths);
   * without it, it gets 404.
   */
  handleNode(req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** A fetch-style handler, for Hono, Fastify, serverless runtimes and `Bun.serve`/`Deno.serve`. */
  fetch(request: Request, info?: FetchInfo): Promise<Response>;
  /** Starts the session engine (renewal and reclaim); warns once when running in open mode. */
  start(): void;
  /** Stops the session engine and waits for running releases. Nothing is reclaimed by stopping. */
  stop(): Promise<void>;
  /**
   * The gate of a console websocket (noVNC, terminal, RDP) of a claimed desktop: only its holder and the
   * admins pass. The console is counted by the session engine until the handle's `close()`.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `MEMBER_NOT_FOUND`, `INVALID_INPUT`,
   *   `UNAUTHENTICATED` (an empty identity).
   */
  authorizeConsole(options: AuthorizeConsoleOptions): Promise<ConsoleHandle>;
  /** Who a request is from, by the configured providers and peer tokens; for console upgrades. */
  identify(request: Request | IncomingMessage, info?: FetchInfo): Promise<CallerIdentity>;
  /** The session engine, for hosts that read its state or drive a pass. */
  readonly sessions: SessionEngine;
  /** The SDK the broker acts through. */
  readonly vdi: Vdi;
}

const brokerOptionsSchema = z.object({
  identity: z.array(
    z.custom<IdentityProvider>(
      (value) => typeof (value as IdentityProvider | undefined)?.identify === 'function',
      {
        error: 'each identity provider needs an identify(request) function',
      },
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
});

const jsonHeaders = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

function answer(status: number, body: unknown, headers: Record<string, string> = {}): BrokerResponse {
  return { status, headers: { ...jsonHeaders, ...headers }, body: JSON.stringify(body) };
}

function failure(code: VdiErrorCode, message: string, headers: Record<string, string> = {}): BrokerResponse {
  return answer(httpStatusByCode[code], { error: { code, message } }, headers);
}

function isReadable(audit: AuditSink): audit is ReadableAuditSink {
  return typeof (audit as Partial<ReadableAuditSink>).list === 'function';
}

// Browsers mark cross-site requests; a claim or release must never ride on a user's proxy login from another site.
function isCrossSite(headers: Headers): boolean {
  const site = headers.get('sec-fetch-site');
  return site === 'cross-site' || site === 'same-site';
}

const nullable = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

function desktopBody(view: DesktopView, session: DesktopSession) {
  return {
    id: view.id,
    kind: view.kind,
    namespace: view.namespace,
    member: view.member,
    pool: view.pool,
    poolId: view.poolId,
    owner: nullable(view.owner),
    sessionId: nullable(view.sessionId),
    claimedAt: nullable(view.claimedAt),
    expiresAt: nullable(view.expiresAt),
    legacy: view.legacy,
    phase: view.phase,
    running: view.running,
    ephemeral: view.ephemeral,
    connected: session.connected,
    disconnectedAt: nullable(session.disconnectedAt),
    reclaimAt: nullable(session.reclaimAt),
    reclaimReason: nullable(session.reclaimReason),
  };
}

/**
 * Creates the self-service broker: an HTTP API on `/api/vdi/` where an authenticated user claims a desktop of a
 * pool, starts it, gets its console and releases it, and admins see and release everyone's; the task routes
 * `GET /api/tasks/{id}` and `GET /api/tasklog`; and the console gate for a host application's websockets.
 *
 * Identity comes only from the request pipeline, through `identity` providers; bodies and queries never name
 * the caller. Only the namespaces in `namespaces` are served. Call `start()` to run the session engine that
 * renews claims and reclaims abandoned desktops.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { brokerOptionsFromEnv, createBroker, tailscaleIdentity } from '@corral/vdi';
 *
 * const broker = createBroker({
 *   ...brokerOptionsFromEnv(process.env),
 *   identity: [tailscaleIdentity({ trustHeaders: true })],
 * });
 * broker.start();
 * createServer(broker.handleNode).listen(8080, '127.0.0.1');
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for bad options, an empty provider list, or a `vdi` whose audit sink
 *   cannot be read back.
 * @category broker
 */
export function createBroker(options: BrokerOptions): Broker {
  const parsed = parseOptions(brokerOptionsSchema, options, 'createBroker');
  if (parsed.identity.length === 0) {
    throw new VdiError(
      'INVALID_INPUT',
      'createBroker needs at least one identity provider, such as tailscaleIdentity({ trustHeaders: true }) or authGatewayIdentity().',
    );
  }
  const log = parsed.log ?? ((message: string) => console.warn(message));
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
  const audit: ReadableAuditSink = vdi.audit;
  const ctx = vdi.context;
  const admins = new Set(parsed.admins ?? []);
  const openMode = admins.size === 0;
  const enabled = parsed.enabled ?? true;
  const authRequired = parsed.authRequired ?? false;
  const sessions = createSessionEngine(ctx, {
    namespaces,
    policy: {
      ...(parsed.disconnectGraceMs === undefined ? {} : { disconnectGraceMs: parsed.disconnectGraceMs }),
      ...(parsed.maxSessionMs === undefined ? {} : { maxSessionMs: parsed.maxSessionMs }),
    },
    ...(parsed.intervalMs === undefined ? {} : { intervalMs: parsed.intervalMs }),
  });
  const tasks = createTaskRegistry(ctx.clock);
  const resolveIdentity = createIdentityResolver({
    providers: parsed.identity,
    peerTokens: parsed.peerTokens ?? [],
  });
  const openApi = JSON.stringify(buildOpenApiDocument());

  const isAdmin = (login: string) => openMode || admins.has(login);

  async function readDesktop(
    namespace: string,
    member: string,
  ): Promise<{ view: DesktopView; lease: LeaseObject | undefined }> {
    const [vm, lease] = await Promise.all([
      ctx.cluster.getVm(namespace, member),
      ctx.cluster.getLease(namespace, leaseNameFor(member)),
    ]);
    if (!vm?.metadata.labels?.[poolLabel]) {
      throw new VdiError(
        'MEMBER_NOT_FOUND',
        `There is no desktop vm/${namespace}/${member}; list your desktops or the pools.`,
        {
          details: { namespace, member },
        },
      );
    }
    return { view: toDesktopView(vm, lease), lease };
  }

  // Holder or admin; a desktop nobody holds is an ended claim for everyone but admins.
  function requireHolderOrAdmin(view: DesktopView, login: string): void {
    if (view.owner === login || isAdmin(login)) return;
    if (view.owner === undefined) {
      throw new VdiError(
        'CLAIM_ENDED',
        `Desktop ${view.id} is not claimed; claim its pool ${view.poolId} to get a desktop.`,
      );
    }
    throw new VdiError(
      'NOT_HOLDER',
      `Desktop ${view.id} is held by another user; only its holder or an admin may use it.`,
    );
  }

  const describe = (view: DesktopView, lease: LeaseObject | undefined) =>
    desktopBody(view, sessions.describe({ namespace: view.namespace, member: view.member, lease }));

  async function leasesByName(): Promise<Map<string, LeaseObject>> {
    const lists = await Promise.all(
      namespaces.map((namespace) => ctx.cluster.listLeases(namespace, leasePoolLabel)),
    );
    return new Map(
      lists.flat().map((lease) => [`${lease.metadata.namespace}/${lease.metadata.name}`, lease]),
    );
  }

  async function parseBody(request: BrokerRequest): Promise<BrokerResponse | undefined> {
    const read = await request.readBody();
    if (read.kind === 'too-large') {
      return failure(
        'PAYLOAD_TOO_LARGE',
        `The request body is over ${maxBodyBytes} bytes; these routes take no body.`,
        {
          connection: 'close',
        },
      );
    }
    const text = new TextDecoder().decode(read.bytes).trim();
    if (text === '') return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return failure('INVALID_INPUT', 'The request body is not valid JSON; send no body, or a JSON object.');
    }
    if (!actionBodySchema.safeParse(value).success || Array.isArray(value)) {
      return failure('INVALID_INPUT', 'The request body must be a JSON object (its fields are ignored).');
    }
    return undefined;
  }

  async function dispatch(
    route: BrokerRoute,
    login: string,
    request: BrokerRequest,
  ): Promise<BrokerResponse> {
    const admin = isAdmin(login);
    switch (route.name) {
      case 'openapi':
        return { status: 200, headers: jsonHeaders, body: openApi };
      case 'list-pools': {
        const pools = await listPools(ctx, { namespaces });
        return answer(
          200,
          poolListSchema.parse({
            pools: pools.map((pool) => ({
              id: pool.id,
              kind: 'vm',
              namespace: pool.namespace,
              name: pool.name,
              members: pool.counts.members,
              claimed: pool.counts.claimed,
              free: pool.counts.free,
            })),
          }),
        );
      }
      case 'claim': {
        const claimed = await vdi.claim({ pool: route.pool, identity: login, namespace: route.namespace });
        const lease = await ctx.cluster.getLease(route.namespace, leaseNameFor(claimed.member));
        return answer(
          200,
          claimedDesktopSchema.parse({
            ...describe(claimed, lease),
            owner: claimed.owner,
            sessionId: claimed.sessionId,
            retried: claimed.retried,
            adopted: claimed.adopted,
            ...(claimed.startError === undefined ? {} : { startError: claimed.startError }),
          }),
        );
      }
      case 'list-desktops': {
        const query = desktopListQuerySchema.safeParse({ all: request.query.get('all') ?? undefined });
        if (!query.success)
          return failure('INVALID_INPUT', 'The query parameter all takes 1 (every user) or 0 (yours).');
        const all = query.data.all === '1';
        if (all && !admin)
          return failure(
            'FORBIDDEN',
            "Only admins may list every user's desktops; drop ?all=1 to list yours.",
          );
        const [views, leases] = await Promise.all([
          vdi.listDesktops({ namespaces, ...(all ? {} : { identity: login }) }),
          leasesByName(),
        ]);
        const desktops = views.map((view) =>
          describe(view, leases.get(`${view.namespace}/${leaseNameFor(view.member)}`)),
        );
        return answer(200, desktopListSchema.parse({ desktops }));
      }
      case 'get-desktop': {
        const { view, lease } = await readDesktop(route.namespace, route.member);
        requireHolderOrAdmin(view, login);
        return answer(200, desktopSchema.parse(describe(view, lease)));
      }
      case 'start': {
        const { view, lease } = await readDesktop(route.namespace, route.member);
        requireHolderOrAdmin(view, login);
        const started = await vdi.start({
          member: route.member,
          identity: login,
          namespace: route.namespace,
          asAdmin: admin,
        });
        return answer(200, desktopSchema.parse(describe(started, lease)));
      }
      case 'release': {
        const { view } = await readDesktop(route.namespace, route.member);
        requireHolderOrAdmin(view, login);
        const suffix = ctx.newSessionId().replaceAll('-', '').slice(0, 12);
        const task = tasks.run(
          {
            id: `vdi-release-${route.namespace}-${route.member}-${suffix}`,
            action: view.owner === login ? 'vdi release' : 'vdi force-release',
            desktop: view.id,
            user: login,
          },
          async () => {
            try {
              await vdi.release({
                member: route.member,
                identity: login,
                namespace: route.namespace,
                asAdmin: admin,
              });
            } catch (error) {
              if (!isVdiError(error))
                log(`broker: the release of ${view.id} failed unexpectedly: ${String(error)}`);
              throw error;
            }
          },
        );
        return answer(202, releaseAcceptedSchema.parse({ desktop: view.id, task: task.id }));
      }
      case 'connect': {
        const { view } = await readDesktop(route.namespace, route.member);
        requireHolderOrAdmin(view, login);
        const result = await connect(ctx, {
          member: route.member,
          identity: login,
          namespace: route.namespace,
          asAdmin: admin,
        });
        return answer(200, connectAnswerSchema.parse(result));
      }
      case 'get-task': {
        const task = tasks.get(route.id);
        if (!task || (task.user !== login && !admin)) {
          return failure(
            'NOT_FOUND',
            `There is no task ${route.id} of yours; tasks are kept while this broker runs.`,
          );
        }
        return answer(
          200,
          taskSchema.parse({ ...task, finishedAt: nullable(task.finishedAt), error: nullable(task.error) }),
        );
      }
      case 'task-log': {
        const records = await audit.list();
        return answer(
          200,
          taskLogSchema.parse({
            records: admin ? records : records.filter((record) => record.user === login),
          }),
        );
      }
    }
  }

  function refuse(identity: CallerIdentity): BrokerResponse | undefined {
    switch (identity.kind) {
      case 'anonymous':
        return failure(
          'UNAUTHENTICATED',
          'Sign in first: this request carries no identity the broker trusts.',
        );
      case 'invalid':
        return failure(
          'UNAUTHENTICATED',
          `The ${identity.provider} identity header carries no usable login.`,
        );
      case 'service':
        return failure('FORBIDDEN', 'A service identity is not a user; the desktop routes serve users only.');
      case 'user':
        return undefined;
    }
  }

  /** Routes one request; `undefined` means the path is not the broker's and may go on to the host. */
  async function route(request: BrokerRequest): Promise<BrokerResponse | undefined> {
    const match = matchRoute({
      method: request.method,
      rawPath: request.rawPath,
      servedNamespaces: namespaces,
    });
    if (match.kind === 'not-broker') {
      if (!authRequired || !request.rawPath.startsWith('/api/')) return undefined;
      const identity = await resolveIdentity(request);
      return identity.kind === 'anonymous' || identity.kind === 'invalid' ? refuse(identity) : undefined;
    }
    if (!enabled && request.rawPath.startsWith('/api/vdi/')) {
      return failure('NOT_FOUND', 'The desktop broker is turned off here.');
    }
    const identity = await resolveIdentity(request);
    const refused = refuse(identity);
    if (refused || identity.kind !== 'user') return refused;
    if (match.kind === 'reject') {
      return failure(match.code, match.message, match.allow ? { allow: match.allow.join(', ') } : {});
    }
    if (request.method === 'POST') {
      if (isCrossSite(request.headers)) {
        return failure(
          'FORBIDDEN',
          'Cross-site requests may not change desktops; use the broker from its own origin.',
        );
      }
      const bad = await parseBody(request);
      if (bad) return bad;
    }
    try {
      return await dispatch(match.route, identity.login, request);
    } catch (error) {
      if (isVdiError(error)) return failure(error.code, error.message);
      log(
        `broker: ${request.method} ${request.rawPath} failed unexpectedly: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      return failure('INTERNAL', 'The broker failed unexpectedly; its log has the details.');
    }
  }

  const notFound = () => failure('NOT_FOUND', 'Not found.');

  function nodeRequest(req: IncomingMessage): BrokerRequest {
    const target = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
    return {
      method: req.method ?? 'GET',
      ...splitTarget(target),
      headers: headersOfNode(req),
      remoteAddress: req.socket.remoteAddress,
      readBody: () => readNodeBody(req),
    };
  }

  function webRequest(request: Request, info: FetchInfo | undefined): BrokerRequest {
    const url = new URL(request.url);
    return {
      method: request.method,
      rawPath: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      remoteAddress: info?.remoteAddress,
      readBody: () => readWebBody(request),
    };
  }

  return {
    handleNode(req, res, next) {
      route(nodeRequest(req)).then(
        (response) => {
          if (response) writeNodeResponse(res, response);
          else if (next) next();
          else writeNodeResponse(res, notFound());
        },
        (error: unknown) => {
          log(`broker: ${req.method} ${req.url} failed unexpectedly: ${String(error)}`);
          if (!res.headersSent)
            writeNodeResponse(
              res,
              failure('INTERNAL', 'The broker failed unexpectedly; its log has the details.'),
            );
          else res.destroy();
        },
      );
    },
    async fetch(request, info) {
      const response = (await route(webRequest(request, info))) ?? notFound();
      return new Response(response.body, { status: response.status, headers: response.headers });
    },
    start() {
      if (openMode) {
        log(
          'broker: CORRAL_ADMINS is empty, so every caller is an admin and may release any desktop (open mode); set an admin allowlist before offering the broker to more than one person.',
        );
      }
      sessions.start();
    },
    async stop() {
      await sessions.stop();
      await tasks.settled();
    },
    async authorizeConsole(consoleOptions) {
      const { desktopId, identity, kind } = parseOptions(
        z.object({ desktopId: z.string(), identity: z.string(), kind: z.enum(['vnc', 'terminal', 'rdp']) }),
        consoleOptions,
        'authorizeConsole',
      );
      if (identity.trim() === '')
        throw new VdiError(
          'UNAUTHENTICATED',
          'A console needs a signed-in user; pass the login of broker.identify().',
        );
      const id = parseDesktopId(desktopId, namespaces);
      if (id.kind === 'reject') throw new VdiError(id.code, id.message);
      const { namespace, member } = id;
      const [vm, lease] = await Promise.all([
        ctx.cluster.getVm(namespace, member),
        ctx.cluster.getLease(namespace, leaseNameFor(member)),
      ]);
      if (!vm?.metadata.labels?.[poolLabel]) {
        throw new VdiError(
          'MEMBER_NOT_FOUND',
          `${desktopId} is not a desktop of a served pool; its consoles keep their own rules.`,
        );
      }
      const state = classifyMember({ vm, lease, identity, now: ctx.clock.now() });
      checkDesktopAccess(state, { desktopId, asAdmin: isAdmin(identity), action: 'open a console of' });
      return await sessions.openConsole({ member, namespace, identity, kind });
    },
    async identify(request, info) {
      return await resolveIdentity(
        request instanceof Request
          ? { headers: request.headers, remoteAddress: info?.remoteAddress }
          : { headers: headersOfNode(request), remoteAddress: request.socket.remoteAddress },
      );
    },
    sessions,
    vdi,
  };
}
