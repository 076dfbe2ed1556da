import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import type { DesktopKind } from '../desktop-backend.js';
import type { VdiEvents } from '../events.js';
import { createLeaderElector, type LeaderElector } from '../leader/leader-elector.js';
import { type BrokerMetrics, createBrokerMetrics } from '../metrics/broker-metrics.js';
import { readPoolCounts } from '../metrics/read-pool-counts.js';
import { formatDuration } from '../parse-duration.js';
import { readPoolPlans } from '../pool-status/read-pool-plans.js';
import { defaultReclaimPolicy } from '../sessions/plan-reclaim.js';
import {
  type ConsoleHandle,
  type ConsoleKind,
  createSessionEngine,
  type SessionEngine,
} from '../sessions/session-engine.js';
import type { Vdi } from '../vdi.js';
import { answerFailure, answerUnexpected } from './answers.js';
import { type BrokerOptions, type ResolvedBrokerOptions, resolveBrokerOptions } from './broker-options.js';
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
import {
  type BrokerRequest,
  type BrokerResponse,
  headersOfNode,
  nodeRequest,
  webRequest,
  webResponse,
  writeNodeResponse,
} from './http-io.js';
import { type CallerIdentity, createIdentityResolver } from './identity.js';
import { matchRoute } from './match-route.js';
import { createOperationAnswers, createReadiness } from './operations.js';
import { createRouteHandlers, describeClaim } from './route-handlers.js';
import { createRouter, createUpgradeRouter } from './router.js';
import { createSparesLoop, type SparesPassResult } from './spares-loop.js';
import { createTaskRegistry } from './tasks.js';
import { createWaiterRegistry } from './waiters.js';

export type {
  BrokerLeaderElection,
  BrokerLogFields,
  BrokerLogger,
  BrokerOptions,
  ReadableAuditSink,
} from './broker-options.js';
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
   * every `intervalMs`; warns once when running in open mode. With `leaderElection`, it starts the elector
   * instead, and the three loops run only while this replica leads. Logs one line saying what it runs.
   *
   * With `enabled: false` the broker is off and this starts none of it: no loop, no elector, no cache; nothing
   * renews or reclaims a claim, so claims expire as they do without a broker. The routes still answer (404 on
   * `/api/vdi/`), as do `/healthz`, `/readyz` and the `authRequired` check of a host's other `/api` paths.
   */
  start(): void;
  /**
   * Fails `/readyz` at once and resolves after `drainDelayMs`, the broker serving meanwhile as before: time for
   * the platform to stop routing requests to a replica on its way out. `serveBroker` drains on SIGTERM before it
   * shuts down; a host of its own calls it before `stop()`. `stop()` ends a drain early. Calling it again returns
   * the same promise.
   */
  drain(): Promise<void>;
  /**
   * Fails `/readyz` at once, closes the open console websockets (1001), stops the session engine, the reconcile
   * loop and the spare keeper and waits for running releases. Nothing is reclaimed by stopping. A leader then
   * releases the leader Lease, so another replica takes over at once.
   */
  stop(): Promise<void>;
  /**
   * Whether this process runs the session passes and the reconcile loop now: after `start()` without leader
   * election; with it, while this replica holds the leader Lease. No I/O.
   */
  isLeader(): boolean;
  /** The leader elector, when `leaderElection` is on: its identity, Lease and fence. */
  readonly leader: LeaderElector | undefined;
  /** The broker's metrics, kept whether or not `/metrics` is served; the leader gauge follows {@link Broker.isLeader}. */
  readonly metrics: BrokerMetrics;
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
   * admins pass, and the holder only while the desktop's pool lets them in (always, for a desktop an admin assigned).
   * The console is counted by the session engine until the handle's `close()`.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `MEMBER_NOT_FOUND`, `INVALID_INPUT`,
   *   `NOT_ENTITLED` (the pool no longer lets the holder in), `UNAUTHENTICATED` (an empty identity).
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
  const isAdmin = createAdminCheck(settings.admins, settings.adminGroups);
  const metrics = createBrokerMetrics({
    ctx,
    readPools: (shared) => readPoolCounts(ctx, namespaces, shared),
    readPlans: (shared) => readPoolPlans(ctx, namespaces, { cached: true, shared }),
    readConsoles: () => consoles.list(),
    log,
  });
  // a claim answers whether or not its claimant Lease could be deleted; what it left is the operator's to see
  const logClaimantLeaseLeft = (left: VdiEvents['claimant-lease-left'][0]) =>
    log(
      `broker: a claim of ${left.identity} left its claimant Lease ${left.namespace}/${left.lease} (${left.error}); the identity's next claim that takes it waits 5 s for it: grant delete on leases`,
    );
  ctx.events.on('claimant-lease-left', logClaimantLeaseLeft);
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  // with caches, /readyz waits until they hold their first lists, which they start to read at start()
  const cachesSynced =
    settings.caches && settings.enabled ? [started.then(() => vdi.waitForCacheSync())] : [];
  // the loops' passes read the caches: run before these hold their first lists, each would list every served
  // namespace from the apiserver beside them; caches refused for good leave the loops to the apiserver
  const cachesHeld = Promise.all(cachesSynced).catch(() => {});
  const readiness = createReadiness([...settings.readiness, ...cachesSynced], log);
  // a broker that is off has nothing to lead, and must not hold the Lease a replica that is on waits for
  const leader =
    settings.leaderElection === undefined || !settings.enabled
      ? undefined
      : createLeaderElector(ctx, {
          ...settings.leaderElection,
          namespace: settings.leaderElection.namespace ?? namespaces[0] ?? '',
          onStarted: () => {
            log(`broker: leading as ${leader?.identity}: this replica runs the session passes now`);
            startLoopsOnceCached(() => leader?.isLeader() ?? false);
          },
          onStopped: async () => {
            await stopLoops();
            log(`broker: stopped leading as ${leader?.identity}`);
          },
          log,
        });
  const sessions = createSessionEngine(ctx, {
    namespaces,
    ...settings.sessions,
    // the replica records its consoles on the claims' Leases under the name it is elected by
    ...(leader === undefined ? {} : { fence: leader.fence, replicaId: leader.identity }),
    observePass: metrics.timeReclaimPass,
  });
  const tasks = createTaskRegistry(ctx.clock);
  const identify = createIdentityResolver({ providers: settings.identity, peerTokens: settings.peerTokens });
  const desktops = createDesktopReader(ctx, sessions, namespaces);
  const waiters = createWaiterRegistry(vdi, (claimed) => describeClaim(desktops, claimed), log);
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
      waiters,
      listAudit: () => settings.audit.list(),
      namespaces,
      maxDesktopsPerUser: settings.maxDesktopsPerUser,
      metrics,
      log,
    }),
    operations: createOperationAnswers(readiness, settings.metrics ? metrics : undefined),
    log,
  };
  const route = createRouter(routerOptions);
  const admitUpgrade = createUpgradeRouter(routerOptions);
  const consoles = createConsoleProxy({
    ctx,
    sessions,
    limits: {
      ...defaultConsoleLimits,
      rdpHandshakeTimeoutMs: settings.rdpHandshakeTimeoutMs ?? defaultConsoleLimits.rdpHandshakeTimeoutMs,
    },
    log,
  });
  const notFound = () => answerFailure('NOT_FOUND', 'Not found.');
  const loopOptions = { vdi, namespaces, intervalMs: settings.sessions.intervalMs ?? 30_000, log };
  const ctPools = createCtReconcileLoop(loopOptions);
  const spares = createSparesLoop({ ...loopOptions, fence: leader?.fence });
  let loopsRunning = false;
  let stopping = false;
  let draining: Promise<void> | undefined;
  let endDrain = () => {};

  function startLoopsOnceCached(stillWanted: () => boolean): void {
    void cachesHeld.then(() => {
      if (!stopping && stillWanted()) startLoops();
    });
  }

  function startLoops(): void {
    loopsRunning = true;
    metrics.setLeader(true);
    sessions.start();
    ctPools.start();
    spares.start();
  }

  async function stopLoops(): Promise<void> {
    loopsRunning = false;
    metrics.setLeader(false);
    await Promise.all([sessions.stop(), ctPools.stop(), spares.stop()]);
  }

  // One line per request the broker answered, for the access log.
  function logAnswer(request: BrokerRequest, response: BrokerResponse, since: number): void {
    const durationMs = Math.round(performance.now() - since);
    const { method, rawPath: path, requestId } = request;
    log(`broker: ${method} ${path} ${response.status} ${durationMs}ms (request ${requestId})`, {
      level: 'info',
      requestId,
      method,
      path,
      status: response.status,
      durationMs,
    });
  }

  return {
    handleNode(req, res, next) {
      const since = performance.now();
      const request = nodeRequest(req);
      const answer = (response: BrokerResponse) => {
        writeNodeResponse(res, response, request.requestId);
        logAnswer(request, response, since);
      };
      route(request).then(
        (response) => {
          if (response) answer(response);
          else if (next) next();
          else answer(notFound());
        },
        (error: unknown) => {
          log(`broker: ${req.method} ${req.url} failed unexpectedly: ${String(error)}`, {
            level: 'error',
            requestId: request.requestId,
          });
          if (!res.headersSent) answer(answerUnexpected());
          else res.destroy();
        },
      );
    },
    async fetch(request, info) {
      const since = performance.now();
      const brokerRequest = webRequest(request, info?.remoteAddress);
      const response = (await route(brokerRequest)) ?? notFound();
      logAnswer(brokerRequest, response, since);
      return webResponse(response, brokerRequest.requestId);
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
              protocol: protocol as ConsoleKind,
              caller: admission.caller,
            });
          } else {
            refuseUpgrade(socket, admission.kind === 'answer' ? admission.response : notFound());
          }
        })
        .catch((error: unknown) => {
          log(`broker: upgrade ${req.url} failed unexpectedly: ${String(error)}`, {
            level: 'error',
            requestId: request.requestId,
          });
          refuseUpgrade(socket, answerUnexpected());
        });
      return true;
    },
    consoles: () => consoles.list(),
    reconcileCtPools: () => ctPools.runPass(),
    keepSpares: () => spares.runPass(),
    start() {
      markStarted();
      log(describeStart(settings, leader, loopOptions.intervalMs));
      if (!settings.enabled) return;
      if (settings.admins.length === 0 && settings.adminGroups.length === 0) {
        log(
          'broker: CORRAL_ADMINS and CORRAL_ADMIN_GROUPS are empty, so every caller is an admin and may release any desktop (open mode); set an admin allowlist before offering the broker to more than one person.',
        );
      }
      if (settings.caches) vdi.startCaches(namespaces);
      if (leader) leader.start();
      else startLoopsOnceCached(() => true);
    },
    drain() {
      readiness.stop();
      draining ??= new Promise((resolve) => {
        const timer = setTimeout(resolve, settings.drainDelayMs);
        endDrain = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      return draining;
    },
    async stop() {
      stopping = true;
      readiness.stop();
      endDrain();
      await consoles.closeAll();
      // a leader stops its loops before it releases the Lease, so no pass outlives its term; a wait runs in this
      // process: stopping cancels it
      await Promise.all([leader?.stop(), waiters.cancelAll()]);
      await stopLoops();
      await tasks.settled();
      if (settings.caches && settings.enabled) vdi.stopCaches();
      metrics.detach();
      ctx.events.off('claimant-lease-left', logClaimantLeaseLeft);
    },
    isLeader: () => (leader ? leader.isLeader() : loopsRunning),
    leader,
    metrics,
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

/** What a started broker does, in one log line: the loops it runs and the policy they apply, or that it runs none. */
function describeStart(
  settings: ResolvedBrokerOptions,
  leader: LeaderElector | undefined,
  intervalMs: number,
): string {
  if (!settings.enabled) {
    return (
      'broker: off (enabled is false; CORRAL_VDI_BROKER=1 turns it on): every /api/vdi/ route answers 404, and this ' +
      'process renews no claim, reclaims nothing, keeps no spares and reconciles no container pool.'
    );
  }
  const policy = { ...defaultReclaimPolicy, ...settings.sessions.policy };
  const durationOrOff = (ms: number | undefined) => (ms ? formatDuration(ms) : 'off');
  const when = leader
    ? `while this replica leads (Lease ${leader.namespace}/${leader.leaseName})`
    : 'in this process';
  return (
    `broker: on for namespaces ${settings.namespaces.join(', ')}: every ${formatDuration(intervalMs)}, ${when}, ` +
    `it renews the claims, reclaims by the policy (disconnect grace ${durationOrOff(policy.disconnectGraceMs)}, ` +
    `max session ${durationOrOff(policy.maxSessionMs)}, idle ${durationOrOff(policy.idleTimeoutMs)} or the ` +
    "pool's own), keeps warm spares and reconciles container pools."
  );
}
