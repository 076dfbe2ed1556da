import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { VdiError } from '../errors.js';
import { answerFailure, answerUnexpected } from './answers.js';
import { type Broker, type BrokerOptions, createBroker } from './broker.js';
import { defaultDrainDelayMs } from './broker-settings.js';
import { createDesktopsPage } from './desktops-page.js';
import { writeNodeResponse } from './http-io.js';
import type { OidcSignIn } from './oidc-sign-in.js';

/** Options of {@link serveBroker}. @category broker */
export interface ServeBrokerOptions extends BrokerOptions {
  /**
   * Where to listen, `host:port` (`[::1]:8080` for IPv6; port `0` picks a free one). Keep it on loopback
   * behind the identity proxy unless every other path to it is closed.
   * @defaultValue `'127.0.0.1:8080'`
   */
  listen?: string;
  /**
   * Shut down gracefully on SIGTERM and SIGINT: on SIGTERM after the drain delay (`drainDelayMs`), serving
   * meanwhile while `/readyz` fails; on SIGINT at once.
   * @defaultValue `true`
   */
  handleSignals?: boolean;
  /**
   * The folder of the built Desktops page (`dist/ui` of this package) to serve at `/` beside the API;
   * `corral-vdi broker serve --ui` passes it. Without it, `/` answers 404.
   */
  desktopsPage?: string;
  /**
   * The broker's own OpenID Connect sign-in (see {@link createOidcSignIn}): its routes are served beside the API
   * and a visit to the Desktops page without a session goes to the issuer. Its `identity` must be in `identity`.
   */
  signIn?: OidcSignIn;
  /**
   * Serve `GET /metrics`, `/healthz` and `/readyz` on a listener of their own, `host:port`, such as `0.0.0.0:9090`
   * for the scraper and the probes of the platform while the API stays on loopback behind its identity proxy.
   * `metrics: true` serves the metrics on the API's listener instead.
   */
  metricsListen?: string;
  /**
   * How long a shutdown waits for running work (releases, a reclaim pass, requests in flight, the shutdown hooks)
   * before it closes what is left, in ms. Keep it and the drain delay together below the platform's grace period
   * (Kubernetes: 30 s unless the Pod says otherwise).
   * @defaultValue 20000
   */
  shutdownTimeoutMs?: number;
}

/** Work a shutdown runs once the session engine stopped, such as releasing a leader Lease. @category broker */
export type ShutdownHook = () => Promise<void>;

/** A running standalone broker. @category broker */
export interface BrokerServer {
  /** The base URL it listens on, such as `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The base URL of the metrics listener of `metricsListen`, when there is one. */
  readonly metricsUrl: string | undefined;
  /** The broker behind it, for its console gate and session engine. */
  readonly broker: Broker;
  /**
   * Shuts down at once, without the drain a SIGTERM gets: `/readyz` fails, stops accepting connections, closes
   * the open consoles (1001), stops the session engine, waits for running releases and lets requests in flight
   * finish (each answer then closes its connection, so a client that keeps connections alive holds nothing open),
   * then runs the shutdown hooks; after `shutdownTimeoutMs` it logs what it still waited for and closes the rest.
   * Nothing is reclaimed by the shutdown. Calling it again returns the same promise.
   */
  close(): Promise<void>;
  /** Adds work to the end of every shutdown, run in the order added; a hook that fails is logged and the rest go on. */
  onShutdown(hook: ShutdownHook): void;
  /** Resolves once the server has shut down, by {@link BrokerServer.close} or a signal. */
  readonly closed: Promise<void>;
}

/**
 * Parses a listen address `host:port` or `[v6]:port`.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for anything else or a port above 65535.
 * @category broker
 */
export function parseListenAddress(listen: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(listen.trim());
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  if (!match || host === undefined || port > 65535) {
    throw new VdiError(
      'INVALID_INPUT',
      `--listen "${listen}" is not host:port; use for example 127.0.0.1:8080 or [::1]:8080.`,
      {
        details: { listen },
      },
    );
  }
  return { host, port };
}

/**
 * Gives a broker's HTTP server its keep-alive settings: idle connections stay open for 65 s, longer than the
 * idle timeout of the proxies a broker sits behind (often 60 s), so the proxy, not the broker, closes an idle
 * connection. With Node's 5 s a client or proxy could send its next request on a connection the broker was
 * closing at that moment, and that request failed with a reset instead of an answer.
 */
export function keepBrokerConnectionsAlive(server: Server): Server {
  server.keepAliveTimeout = 65_000;
  // must outlast the keep-alive timeout, or Node cuts a kept-alive connection that is sending its next headers
  server.headersTimeout = 66_000;
  return server;
}

// Binds a server to `listen` and answers its base URL.
async function listenOn(server: Server, listen: string): Promise<string> {
  const { host, port } = parseListenAddress(listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new VdiError('INTERNAL', `Cannot listen on ${listen}: ${error.code ?? error.message}.`, {
          cause: error,
        }),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}

// The operations listener: the metrics and the probes, so the API can stay on loopback behind its proxy.
function createMetricsServer(broker: Broker): Server {
  return createServer((req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) {
      broker.handleNode(req, res);
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      writeNodeResponse(
        res,
        answerFailure('NOT_FOUND', 'Only GET /metrics, /healthz and /readyz are served here.'),
      );
      return;
    }
    broker.metrics.render().then(
      (text) => {
        res.writeHead(200, { 'content-type': broker.metrics.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
      () => writeNodeResponse(res, answerUnexpected()),
    );
  });
}

/**
 * Lets a shutdown leave no kept-alive connection behind: from `endKeepAlive()` on, an answer not yet begun says
 * `Connection: close` and ends its connection, and one whose head went out closes its connection once sent.
 * `closeIdleConnections()` alone reaches only the connections idle at that moment, not those answering then.
 * From `closeEachAnswer()` on, during a drain, answers not yet begun say `Connection: close` too, so a client
 * whose connection is pinned to this replica opens its next one through the load balancer to a ready one.
 */
function trackAnswers(server: Server): { closeEachAnswer(): void; endKeepAlive(): void } {
  const inFlight = new Set<ServerResponse>();
  let ending = false;
  const closeAfter = (res: ServerResponse) => {
    if (!res.headersSent) res.shouldKeepAlive = false;
    else res.once('finish', () => server.closeIdleConnections());
  };
  // first, so that an answer the handler writes at once is told before its head goes out
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (ending) return closeAfter(res);
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return {
    // idle connections stay: closing one races a request the client sends on it at that moment
    closeEachAnswer() {
      ending = true;
      for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
    },
    endKeepAlive() {
      ending = true;
      for (const res of inFlight) closeAfter(res);
      server.closeIdleConnections();
    },
  };
}

// Resolves true when `work` settled within `ms`, false when the time ran out first.
function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void work.finally(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Runs the broker as its own HTTP server: `corral-vdi broker serve [--listen 127.0.0.1:8080]` calls this.
 * It creates the broker with watch caches of its namespaces (`caches: true` unless told otherwise; `/readyz` waits
 * until they are synced), starts its session engine, and listens. On SIGTERM it fails `/readyz` and goes on
 * serving for `drainDelayMs` (each answer then closes its connection), so requests the platform still routes to
 * it are answered; then, or at once on SIGINT or {@link BrokerServer.close}, it stops accepting, closes the
 * consoles (1001), lets requests in flight and running releases finish within `shutdownTimeoutMs`, stops the
 * engine (a leader then releases its Lease) and runs the shutdown hooks.
 *
 * @example
 * ```ts
 * const server = await serveBroker({
 *   ...brokerOptionsFromEnv(process.env),
 *   identity: [tailscaleIdentity({ trustHeaders: true })],
 *   listen: '127.0.0.1:8080',
 * });
 * console.log(`broker on ${server.url}`);
 * await server.closed;
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for a bad listen address, `shutdownTimeoutMs` or broker options, or a
 *   `desktopsPage` folder without the built page; `INTERNAL` when an address cannot be bound (in use, not local),
 *   with the reason.
 * @category broker
 */
export async function serveBroker(options: ServeBrokerOptions): Promise<BrokerServer> {
  const {
    listen = '127.0.0.1:8080',
    handleSignals = true,
    desktopsPage,
    signIn,
    metricsListen,
    shutdownTimeoutMs = 20_000,
    ...brokerOptions
  } = options;
  parseListenAddress(listen);
  if (metricsListen !== undefined) parseListenAddress(metricsListen);
  if (!Number.isInteger(shutdownTimeoutMs) || shutdownTimeoutMs < 0) {
    throw new VdiError(
      'INVALID_INPUT',
      `shutdownTimeoutMs must be a whole number of milliseconds, 0 or more, not ${shutdownTimeoutMs}.`,
    );
  }
  const page =
    desktopsPage === undefined
      ? undefined
      : createDesktopsPage(desktopsPage, { signOut: signIn !== undefined });
  // a standalone broker reads its namespaces from watch caches; /readyz waits on broker.vdi.waitForCacheSync()
  const broker = createBroker({ caches: true, ...brokerOptions });
  const log = brokerOptions.log ?? ((message: string) => console.warn(message));
  const toBroker: RequestListener = (req, res) =>
    broker.handleNode(
      req,
      res,
      page &&
        (() => {
          if (!page(req, res)) writeNodeResponse(res, answerFailure('NOT_FOUND', 'Not found.'));
        }),
    );
  const server = keepBrokerConnectionsAlive(
    createServer(
      signIn === undefined
        ? toBroker
        : (req, res) =>
            signIn.handle(req, res).then(
              (answered) => answered || toBroker(req, res),
              (error: unknown) => {
                log(`broker: sign-in ${req.method} ${req.url} failed unexpectedly: ${String(error)}`, {
                  level: 'error',
                });
                if (!res.headersSent) writeNodeResponse(res, answerUnexpected());
              },
            ),
    ),
  );
  server.on('upgrade', (req, socket, head: Buffer) => {
    if (!broker.handleUpgrade(req, socket, head)) socket.destroy();
  });
  const url = await listenOn(server, listen);
  const metricsServer = metricsListen === undefined ? undefined : createMetricsServer(broker);
  const servers = [server, ...(metricsServer ? [metricsServer] : [])];
  const answers = servers.map(trackAnswers);
  let metricsUrl: string | undefined;
  try {
    if (metricsServer && metricsListen !== undefined)
      metricsUrl = await listenOn(metricsServer, metricsListen);
  } catch (error) {
    server.close();
    throw error;
  }
  broker.start();
  const hooks: ShutdownHook[] = [];

  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let closing: Promise<void> | undefined;
  let draining: Promise<void> | undefined;
  const onInterrupt = () => void close();
  const onTerminate = () => void drainThenClose();
  // SIGTERM is how the platform takes a replica out while its endpoints may still route requests here
  function drainThenClose(): Promise<void> {
    draining ??= (async () => {
      log(
        `broker: SIGTERM: /readyz fails and requests are still served for ${brokerOptions.drainDelayMs ?? defaultDrainDelayMs} ms, then the broker shuts down.`,
        { level: 'info' },
      );
      for (const each of answers) each.closeEachAnswer();
      await broker.drain();
      await close();
    })();
    return draining;
  }
  function close(): Promise<void> {
    closing ??= (async () => {
      process.off('SIGTERM', onTerminate);
      process.off('SIGINT', onInterrupt);
      const serversClosed = Promise.all(
        servers.map((each) => new Promise<void>((resolve) => each.close(() => resolve()))),
      );
      // kept-alive connections would hold the close open: idle ones close now, the others after their answer
      for (const each of answers) each.endKeepAlive();
      // open consoles would hold the close open too: the broker closes them first (readyz fails at once)
      const work = (async () => {
        await broker.stop();
        for (const hook of hooks) {
          await hook().catch((error: unknown) =>
            log(`broker: a shutdown hook failed: ${error instanceof Error ? error.message : String(error)}`),
          );
        }
        await serversClosed;
      })();
      if (!(await settlesWithin(work, shutdownTimeoutMs))) {
        log(
          `broker: the shutdown still waited after ${shutdownTimeoutMs} ms (releases, hooks or requests in flight); closing the rest.`,
        );
        for (const each of servers) each.closeAllConnections();
      }
      resolveClosed();
    })();
    return closing;
  }
  if (handleSignals) {
    // on, not once: a second SIGTERM during the drain must not kill the process
    process.on('SIGTERM', onTerminate);
    process.once('SIGINT', onInterrupt);
  }
  return { url, metricsUrl, broker, close, closed, onShutdown: (hook) => void hooks.push(hook) };
}
