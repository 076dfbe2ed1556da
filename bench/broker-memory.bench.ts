// What a running broker keeps per request: 20,000 requests on loopback from distinct users (lists, unknown
// tasks, refused logins, bad bodies, uploads abandoned mid-body), with the heap and RSS after a full GC at each
// 5,000. Flat numbers mean nothing grows per request or per identity; the growth per 1,000 requests is printed.
// Run: npx vitest run -c bench/vitest.config.ts bench/broker-memory.bench.ts
import { Agent, createServer, request, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { MemoryAuditSink } from '../src/audit.js';
import { type Broker, createBroker } from '../src/broker/broker.js';
import { tailscaleIdentity } from '../src/broker/identity.js';
import { KubeCluster } from '../src/kube/cluster.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { createTestClock } from '../src/testing/test-clock.js';
import { createVdi } from '../src/vdi.js';

const rounds = 4;
const perRound = 5_000;
const concurrency = 16;
const namespace = 'bench-broker-memory';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

let cluster: LocalCluster | undefined;
let server: Server | undefined;
let broker: Broker | undefined;

function send(port: number, agent: Agent, index: number): Promise<number> {
  const user = `user-${index}@example.com`;
  const kinds: Array<{
    method: string;
    path: string;
    headers: Record<string, string | string[]>;
    body?: string;
  }> = [
    { method: 'GET', path: '/api/vdi/desktops', headers: { 'Tailscale-User-Login': user } },
    {
      method: 'GET',
      path: `/api/tasks/vdi-release-${namespace}-m-${index}`,
      headers: { 'Tailscale-User-Login': user },
    },
    { method: 'GET', path: '/api/vdi/pools', headers: {} },
    {
      method: 'GET',
      path: '/api/vdi/pools',
      headers: { 'Tailscale-User-Login': ['mallory@example.com', user] },
    },
    {
      method: 'POST',
      path: `/api/vdi/pools/vm/${namespace}/nopool/claim`,
      headers: { 'Tailscale-User-Login': user, 'content-type': 'application/json' },
      body: '{"not json',
    },
  ];
  const kind = kinds[index % kinds.length] ?? kinds[0];
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, agent, method: kind?.method, path: kind?.path, headers: kind?.headers },
      (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
    );
    req.on('error', reject);
    req.end(kind?.body);
  });
}

/** An upload the client gives up on after its first bytes. */
function abandonUpload(port: number, index: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /api/vdi/pools/vm/${namespace}/nopool/claim HTTP/1.1\r\nHost: broker\r\n` +
          `Tailscale-User-Login: user-${index}@example.com\r\nContent-Length: 1000\r\n\r\n{"half":`,
      );
      socket.resetAndDestroy();
      resolve();
    });
    socket.on('error', reject);
  });
}

function heap(): { heapMb: number; rssMb: number } {
  collectGarbage();
  const usage = process.memoryUsage();
  return { heapMb: usage.heapUsed / 2 ** 20, rssMb: usage.rss / 2 ** 20 };
}

beforeAll(async () => {
  cluster = await startLocalCluster();
  await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } });
  const kube = new KubeCluster(cluster.kubeConfig);
  for (const index of [1, 2, 3]) {
    await kube.createVm(namespace, {
      metadata: { name: `devpool-${index}`, labels: { 'corral.dev/vdi-pool': 'devpool' } },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
    });
  }
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    if (!server) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
  await broker?.stop();
  await cluster?.stop();
});

describe('broker memory per request', () => {
  it(`stays flat over ${rounds * perRound} requests`, async () => {
    if (!cluster) throw new Error('no cluster');
    const vdi = createVdi({
      kubeConfig: cluster.kubeConfig,
      namespace,
      clock: createTestClock(),
      audit: new MemoryAuditSink(),
    });
    let logged = 0;
    broker = createBroker({
      vdi,
      identity: [tailscaleIdentity({ trustHeaders: true })],
      namespaces: [namespace],
      admins: ['admin@example.com'],
      log: () => {
        logged += 1;
      },
    });
    const running = broker;
    server = createServer((req, res) => running.handleNode(req, res));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });

    let next = 0;
    const runRound = async (count: number) => {
      const end = next + count;
      const worker = async () => {
        while (next < end) {
          const index = next++;
          if (index % 10 === 9) await abandonUpload(port, index);
          else await send(port, agent, index);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    };

    await runRound(1_000);
    const baseline = heap();
    const samples = [baseline];
    const started = performance.now();
    for (let round = 1; round <= rounds; round++) {
      await runRound(perRound);
      samples.push(heap());
    }
    const seconds = (performance.now() - started) / 1000;
    agent.destroy();
    const last = samples.at(-1) ?? baseline;
    const thousands = (rounds * perRound) / 1000;
    console.info(
      `broker memory, ${rounds * perRound} requests (${concurrency} at a time, ${seconds.toFixed(1)} s), heap / RSS ` +
        `after GC at each ${perRound}: ${samples.map((s) => `${s.heapMb.toFixed(1)}/${s.rssMb.toFixed(0)} MB`).join(', ')}; ` +
        `heap growth ${(((last.heapMb - baseline.heapMb) * 1024) / thousands).toFixed(1)} KB per 1,000 requests; ` +
        `${logged} log lines`,
    );
  });
});
