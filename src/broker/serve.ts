import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { VdiError } from '../errors.js';
import { answerFailure } from './answers.js';
import { type Broker, type BrokerOptions, createBroker } from './broker.js';
import { createDesktopsPage } from './desktops-page.js';
import { writeNodeResponse } from './http-io.js';

/** Options of {@link serveBroker}. @category broker */
export interface ServeBrokerOptions extends BrokerOptions {
  /**
   * Where to listen, `host:port` (`[::1]:8080` for IPv6; port `0` picks a free one). Keep it on loopback
   * behind the identity proxy unless every other path to it is closed.
   * @defaultValue `'127.0.0.1:8080'`
   */
  listen?: string;
  /**
   * Shut down gracefully on SIGTERM and SIGINT.
   * @defaultValue `true`
   */
  handleSignals?: boolean;
  /**
   * The folder of the built Desktops page (`dist/ui` of this package) to serve at `/` beside the API;
   * `corral-vdi broker serve --ui` passes it. Without it, `/` answers 404.
   */
  desktopsPage?: string;
}

/** A running standalone broker. @category broker */
export interface BrokerServer {
  /** The base URL it listens on, such as `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The broker behind it, for its console gate and session engine. */
  readonly broker: Broker;
  /**
   * Shuts down: stops accepting connections, closes the open consoles (1001), stops the session engine, waits
   * for running releases and lets requests in flight finish. Nothing is reclaimed by the shutdown. Calling it again returns the same promise.
   */
  close(): Promise<void>;
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
 * Runs the broker as its own HTTP server: `corral-vdi broker serve [--listen 127.0.0.1:8080]` calls this.
 * It creates the broker with watch caches of its namespaces (`caches: true` unless told otherwise), starts its
 * session engine, and listens; on SIGTERM or SIGINT (or
 * {@link BrokerServer.close}) it stops accepting, lets requests in flight finish, and stops the engine.
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
 * @throws {@link VdiError} `INVALID_INPUT` for a bad listen address or broker options, or a `desktopsPage` folder
 *   without the built page; `INTERNAL` when the address cannot be bound (in use, not local), with the reason.
 * @category broker
 */
export async function serveBroker(options: ServeBrokerOptions): Promise<BrokerServer> {
  const { listen = '127.0.0.1:8080', handleSignals = true, desktopsPage, ...brokerOptions } = options;
  const { host, port } = parseListenAddress(listen);
  const page = desktopsPage === undefined ? undefined : createDesktopsPage(desktopsPage);
  // a standalone broker reads its namespaces from watch caches; /readyz waits on broker.vdi.waitForCacheSync()
  const broker = createBroker({ caches: true, ...brokerOptions });
  const server = createServer((req, res) =>
    broker.handleNode(
      req,
      res,
      page &&
        (() => {
          if (!page(req, res)) writeNodeResponse(res, answerFailure('NOT_FOUND', 'Not found.'));
        }),
    ),
  );
  server.on('upgrade', (req, socket, head: Buffer) => {
    if (!broker.handleUpgrade(req, socket, head)) socket.destroy();
  });
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
  broker.start();

  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });
  let closing: Promise<void> | undefined;
  const onSignal = () => void close();
  function close(): Promise<void> {
    closing ??= (async () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      const serverClosed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        // keep-alive connections without a request in flight would hold the close open
        server.closeIdleConnections();
      });
      // open consoles would hold the close open too: the broker closes them first
      await broker.stop();
      await serverClosed;
      resolveClosed();
    })();
    return closing;
  }
  if (handleSignals) {
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { url: `http://${shownHost}:${address.port}`, broker, close, closed };
}
