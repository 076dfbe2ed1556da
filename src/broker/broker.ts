import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { DesktopKind, MemberConsole } from '../desktop-backend.js';
import { type ConsoleHandle, createSessionEngine, type SessionEngine } from '../sessions/session-engine.js';
import type { Vdi } from '../vdi.js';
import { answerFailure, answerUnexpected } from './answers.js';
import { type BrokerOptions, resolveBrokerOptions } from './broker-options.js';
import { createAdminCheck } from './caller-access.js';
import { type AuthorizeConsoleOptions, createConsoleGate } from './console-gate.js';
import {
  createConsoleProxy,
  defaultConsoleLimits,
  type OpenConsole,
  refuseUpgrade,
} from './console-proxy.js';
import { type CtReconcilePassResult, createCtReconcileLoop } from './ct-reconcile-loop.js';
import { createDesktopReader } from './desktop-reader.js';
import { headersOfNode, nodeRequest, webRequest, webResponse, writeNodeResponse } from './http-io.js';
import { type CallerIdentity, createIdentityResolver } from './identity.js';
import { matchRoute } from './match-route.js';
import { createRouteHandlers } from './route-handlers.js';
import { createRouter, createUpgradeRouter } from './router.js';
import { createSparesLoop, type SparesPassResult } from './spares-loop.js';
import { createTaskRegistry } from './tasks.js';

export type { BrokerLogger, BrokerOptions, ReadableAuditSink } from './broker-options.js';
export type { AuthorizeConsoleOptions } from './console-gate.js';
export type { OpenConsole } from './console-proxy.js';
export type { CtReconcilePassResult } from './ct-reconcile-loop.js';
export type { SparesPassResult } from './spares-loop.js';

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
  /**
   * A node:http `upgrade` listener for the console websockets
   * (`GET /api/vdi/desktops/{kind}/{ns}/{member}/console/{vnc|serial}`): it checks the caller, the access rule
   * and the desktop before the upgrade, answering a refusal as a plain HTTP error, then relays the desktop's
   * console through the apiserver with the SDK's credentials. Returns `false`, touching nothing, for a path
   * that is not the broker's, so the host can route its own websockets.
   *
   * @example
   * ```ts
   * server.on('upgrade', (req, socket, head) => {
   *   if (!broker.handleUpgrade(req, socket, head)) socket.destroy();
   * });
   * ```
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** The console websockets open through this broker now, with their queued and relayed bytes. */
  consoles(): OpenConsole[];
  /**
   * Starts the session engine (renewal and reclaim), the container-pool reconcile loop and the spare keeper, all
   * every `intervalMs`; warns once when running in open mode.
   */
  start(): void;
  /**
   * Closes the open console websockets (1001), stops the session engine, the reconcile loop and the spare keeper and waits for
   * running releases. Nothing is reclaimed by stopping.
   */
  stop(): Promise<void>;
  /**
   * One reconcile pass of every container pool of the served namespaces, as the started broker runs on its
   * interval: a pool whose pass fails is logged and listed in `failed`, and the others go on.
   */
  reconcileCtPools(): Promise<CtReconcilePassResult>;
  /**
   * One spare keeper pass over the VM pools with `minReady` of the served namespaces, as the started broker runs
   * on its interval: a pool whose pass fails is logged and listed in `failed`, and the others go on.
   */
  keepSpares(): Promise<SparesPassResult>;
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
  const settings = resolveBrokerOptions(options);
  const { vdi, namespaces, log } = settings;
  const ctx = vdi.context;
  const isAdmin = createAdminCheck(settings.admins);
  const sessions = createSessionEngine(ctx, { namespaces, ...settings.sessions });
  const tasks = createTaskRegistry(ctx.clock);
  const identify = createIdentityResolver({ providers: settings.identity, peerTokens: settings.peerTokens });
  const desktops = createDesktopReader(ctx, sessions, namespaces);
  const routerOptions = {
    namespaces,
    enabled: settings.enabled,
    authRequired: settings.authRequired,
    identify,
    isAdmin,
    desktops,
    handlers: createRouteHandlers({
      vdi,
      desktops,
      sessions,
      tasks,
      listAudit: () => settings.audit.list(),
      namespaces,
      log,
    }),
    log,
  };
  const route = createRouter(routerOptions);
  const admitUpgrade = createUpgradeRouter(routerOptions);
  const consoles = createConsoleProxy({ ctx, sessions, limits: defaultConsoleLimits, log });
  const notFound = () => answerFailure('NOT_FOUND', 'Not found.');
  const loopOptions = { vdi, namespaces, intervalMs: settings.sessions.intervalMs ?? 30_000, log };
  const ctPools = createCtReconcileLoop(loopOptions);
  const spares = createSparesLoop(loopOptions);

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
          if (!res.headersSent) writeNodeResponse(res, answerUnexpected());
          else res.destroy();
        },
      );
    },
    async fetch(request, info) {
      return webResponse((await route(webRequest(request, info?.remoteAddress))) ?? notFound());
    },
    handleUpgrade(req, socket, head) {
      const request = nodeRequest(req);
      const match = matchRoute({
        method: request.method,
        rawPath: request.rawPath,
        servedNamespaces: namespaces,
      });
      if (match.kind === 'not-broker') return false;
      admitUpgrade(request)
        .then(async (admission) => {
          if (admission.kind === 'console') {
            const { kind, ns, member, protocol } = admission.params;
            await consoles.open(req, socket, head, {
              kind: kind as DesktopKind,
              namespace: ns ?? '',
              member: member ?? '',
              protocol: protocol as MemberConsole,
              caller: admission.caller,
            });
          } else {
            refuseUpgrade(socket, admission.kind === 'answer' ? admission.response : notFound());
          }
        })
        .catch((error: unknown) => {
          log(`broker: upgrade ${req.url} failed unexpectedly: ${String(error)}`);
          refuseUpgrade(socket, answerUnexpected());
        });
      return true;
    },
    consoles: () => consoles.list(),
    reconcileCtPools: () => ctPools.runPass(),
    keepSpares: () => spares.runPass(),
    start() {
      if (settings.admins.length === 0) {
        log(
          'broker: CORRAL_ADMINS is empty, so every caller is an admin and may release any desktop (open mode); set an admin allowlist before offering the broker to more than one person.',
        );
      }
      sessions.start();
      ctPools.start();
      spares.start();
    },
    async stop() {
      await consoles.closeAll();
      await Promise.all([sessions.stop(), ctPools.stop(), spares.stop()]);
      await tasks.settled();
    },
    authorizeConsole: createConsoleGate({ ctx, sessions, namespaces, isAdmin }),
    async identify(request, info) {
      return await identify(
        request instanceof Request
          ? { headers: request.headers, remoteAddress: info?.remoteAddress }
          : { headers: headersOfNode(request), remoteAddress: request.socket.remoteAddress },
      );
    },
    sessions,
    vdi,
  };
}
