import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../../src/broker/broker.js';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { startBroker } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function setUp(options: Parameters<typeof startBroker>[3] = {}) {
  const namespace = await createTestNamespace(cluster(), 'edges');
  await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const api = await startBroker(cluster(), namespace, createTestClock(new Date()), options);
  closers.push(() => api.close());
  return { namespace, api };
}

/** Listens on loopback with `listener` and closes with the test. */
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return (server.address() as AddressInfo).port;
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** GETs the caller's desktops with `headers`; an array value sends that header once per entry. */
function getDesktops(
  url: string,
  headers: Record<string, string | string[]>,
): Promise<{ status: number; error: { code: string; message: string } | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/vdi/desktops`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          error: JSON.parse(Buffer.concat(chunks).toString('utf8')).error,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the broker at its edges', () => {
  it('refuses a trusted identity header sent twice, naming the header, whatever Node does with repeats', async () => {
    const { api } = await setUp();
    const twice = await getDesktops(api.url, { 'Tailscale-User-Login': ['mallory@example.com', alice] });
    expect([twice.status, twice.error?.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(twice.error?.message).toContain('Tailscale-User-Login');
    // Node keeps only the first From header in req.headers; the second must still refuse the login
    const gateway = await setUp({ identity: [authGatewayIdentity({ header: 'From' })] });
    expect(await getDesktops(gateway.api.url, { From: alice })).toEqual({ status: 200, error: undefined });
    const repeated = await getDesktops(gateway.api.url, { From: ['mallory@example.com', alice] });
    expect([repeated.status, repeated.error?.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(repeated.error?.message).toContain('From');
  });

  it('answers an upload the client abandoned mid-body as cancelled, without logging a failure', async () => {
    const { api, namespace } = await setUp();
    const answered = new Promise<number>((resolve) => {
      const server = createServer((req, res) => {
        // the broker writes its answer only after it has decided (and logged) what went wrong
        const end = res.end.bind(res);
        res.end = ((...args: Parameters<typeof res.end>) => {
          resolve(res.statusCode);
          return end(...args);
        }) as typeof res.end;
        api.broker.handleNode(req, res);
      });
      void listen(server).then(async (port) => {
        const socket = await open(port);
        socket.write(
          [
            `POST /api/vdi/pools/vm/${namespace}/devpool/claim HTTP/1.1`,
            'Host: broker',
            `Tailscale-User-Login: ${alice}`,
            'Content-Type: application/json',
            'Content-Length: 1000',
            '',
            '{"half":',
          ].join('\r\n'),
        );
        // the first bytes of the body are on the wire; the client gives up before the rest
        socket.resetAndDestroy();
      });
    });
    expect(await answered).toBe(499);
    expect(api.logs.filter((line) => line.includes('unexpectedly'))).toEqual([]);
    expect((await api.call('GET', '/api/vdi/desktops', { as: alice })).body).toEqual({ desktops: [] });
  });
});

/**
 * The console pattern of docs/broker.md ("Consoles"), as a host would write it: the handle closes on `end`,
 * `error` or `close`, and at once when the socket went away while the broker was checking the claim.
 */
function serveConsoles(broker: Broker, desktopId: string, opened: (closed: Promise<void>) => void) {
  return async (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    const caller = await broker.identify(req);
    if (caller.kind !== 'user') return socket.destroy();
    try {
      const handle = await broker.authorizeConsole({ desktopId, identity: caller.login, kind: 'vnc' });
      opened(
        new Promise<void>((resolve) => {
          const close = () => void handle.close().then(resolve);
          if (socket.destroyed || socket.readableEnded) return close();
          for (const event of ['end', 'error', 'close']) socket.once(event, close);
        }),
      );
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      // the proxy of the console: it reads the client and never ends the socket itself
      socket.resume();
    } catch {
      socket.destroy();
    }
  };
}

const upgradeRequest = [
  'GET /console HTTP/1.1',
  'Host: broker',
  'Connection: Upgrade',
  'Upgrade: websocket',
  `Tailscale-User-Login: ${alice}`,
  '',
  '',
].join('\r\n');

describe('the documented console pattern', () => {
  async function consoleSetUp(wrap: (broker: Broker) => Broker = (broker) => broker) {
    const { api, namespace } = await setUp();
    const desktop = (await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: alice }))
      .body;
    const consoles: Array<Promise<void>> = [];
    const server = createServer();
    const serverSockets: Duplex[] = [];
    server.on('upgrade', (_req, socket: Duplex) => serverSockets.push(socket));
    // upgraded sockets are the host's: the server's close does not end them
    closers.push(async () => {
      for (const socket of serverSockets) socket.destroy();
    });
    server.on(
      'upgrade',
      serveConsoles(wrap(api.broker), desktop.id, (closed) => consoles.push(closed)),
    );
    const port = await listen(server);
    const connected = async () =>
      (await api.call('GET', `/api/vdi/desktops/vm/${namespace}/${desktop.member}`, { as: alice })).body
        .connected;
    return { api, port, consoles, connected, serverSockets };
  }

  async function upgrade(port: number): Promise<Socket> {
    const socket = await open(port);
    const switched = new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.write(upgradeRequest);
    await switched;
    return socket;
  }

  async function expectClosed(setup: { consoles: Array<Promise<void>>; connected: () => Promise<boolean> }) {
    await waitFor(() => setup.consoles.length === 1, { describe: 'the upgraded console to be counted' });
    await setup.consoles[0];
    expect(await setup.connected()).toBe(false);
  }

  it('closes the console handle when the client half-closes the socket (end)', async () => {
    const setup = await consoleSetUp();
    const socket = await upgrade(setup.port);
    expect(await setup.connected()).toBe(true);
    // node:http keeps upgraded sockets half-open, so 'close' alone would never come
    socket.end();
    await expectClosed(setup);
  });

  it('closes the console handle when the connection is reset (error)', async () => {
    const setup = await consoleSetUp();
    const socket = await upgrade(setup.port);
    expect(await setup.connected()).toBe(true);
    socket.resetAndDestroy();
    await expectClosed(setup);
  });

  it('closes the console handle when the client was gone before the claim check answered', async () => {
    let client: Socket | undefined;
    const setup = await consoleSetUp((broker) => ({
      ...broker,
      // the client resets while the broker checks, and the host socket is closed before the answer
      async authorizeConsole(options) {
        const hostSide = setup.serverSockets[0];
        const gone = new Promise((resolve) => hostSide?.once('close', resolve));
        client?.resetAndDestroy();
        await gone;
        return await broker.authorizeConsole(options);
      },
    }));
    client = await open(setup.port);
    client.on('error', () => undefined);
    client.write(upgradeRequest);
    await expectClosed(setup);
  });
});
