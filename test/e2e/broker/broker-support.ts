import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import type { WebSocket } from 'ws';
import { MemoryAuditSink } from '../../../src/audit.js';
import { type Broker, type BrokerOptions, createBroker } from '../../../src/broker/broker.js';
import { tailscaleIdentity } from '../../../src/broker/identity.js';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import type { TestClock } from '../../../src/testing/test-clock.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';

export const admin = 'admin@example.com';
export const peerToken = 'peer-token-for-the-broker-tests';

/** An answer as the test client read it. */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read answers field by field and check them with the API schemas
  body: any;
}

/** What one request sends: who it is from (Tailscale login), extra headers, a raw body. */
export interface Call {
  as?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** A broker behind a real node:http server on loopback. */
export interface RunningBroker {
  broker: Broker;
  vdi: Vdi;
  audit: MemoryAuditSink;
  logs: string[];
  url: string;
  /** Sends a request with the path exactly as given (no URL normalisation). */
  call(method: string, path: string, call?: Call): Promise<Reply>;
  close(): Promise<void>;
}

function send(base: string, method: string, path: string, call: Call = {}): Promise<Reply> {
  const { hostname, port } = new URL(base);
  const headers: Record<string, string> = { ...call.headers };
  if (call.as !== undefined) headers['Tailscale-User-Login'] = call.as;
  if (call.body !== undefined) headers['content-length'] = String(Buffer.byteLength(call.body));
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: text === '' ? undefined : JSON.parse(text),
        });
      });
    });
    req.on('error', reject);
    req.end(call.body);
  });
}

/** Starts a broker for one namespace, with the Tailscale header trusted and `admin` as the only admin. */
export async function startBroker(
  cluster: LocalClusterAccess,
  namespace: string,
  clock: TestClock,
  options: Partial<BrokerOptions> = {},
): Promise<RunningBroker> {
  const audit = new MemoryAuditSink();
  const vdi =
    options.vdi ??
    createVdi({
      kubeConfig: cluster.kubeConfig,
      namespace,
      clock,
      audit,
      retry: { retries: 1, minDelayMs: 10 },
    });
  const logs: string[] = [];
  const broker = createBroker({
    vdi,
    identity: [tailscaleIdentity({ trustHeaders: true })],
    namespaces: [namespace],
    admins: [admin],
    peerTokens: [peerToken],
    log: (line) => logs.push(line),
    ...options,
  });
  const server: Server = createServer(broker.handleNode);
  server.on('upgrade', (req, socket, head: Buffer) => {
    if (!broker.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    broker,
    vdi,
    audit: vdi.audit as MemoryAuditSink,
    logs,
    url,
    call: (method, path, call) => send(url, method, path, call),
    async close() {
      const closed = new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // open consoles hold the server open until the broker closes them
      await broker.stop();
      await closed;
    },
  };
}

/** The brokers a test file starts, and the console sockets its tests open to them. */
export interface BrokerFixture {
  /** Starts a broker as {@link startBroker} does; it is closed after the test. */
  start(...args: Parameters<typeof startBroker>): Promise<RunningBroker>;
  /** Closes a broker before the test ends, as a restart does; it is not closed again. */
  close(broker: RunningBroker): Promise<void>;
  /** Sockets pushed here are terminated after the test, before its brokers close. */
  sockets: WebSocket[];
}

/** One broker fixture for a test file: every broker it starts, and every socket it is given, ends after each test. */
export function useBrokers(): BrokerFixture {
  const running: RunningBroker[] = [];
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await Promise.all(running.splice(0).map((broker) => broker.close()));
  });
  return {
    sockets,
    async start(...args) {
      const broker = await startBroker(...args);
      running.push(broker);
      return broker;
    },
    async close(broker) {
      running.splice(running.indexOf(broker), 1);
      await broker.close();
    },
  };
}
