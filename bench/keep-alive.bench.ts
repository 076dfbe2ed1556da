// Sequential apiserver requests against the local control plane, with a new connection for each request (how
// client-node's API clients and a plain https request behave on their own) and through the SDK's adapter, which
// keeps its connections alive. Milliseconds per request, new TLS connections, and the ratio, from one run.
// Run: npx vitest run -c bench/vitest.config.ts bench/keep-alive.bench.ts
import diagnostics from 'node:diagnostics_channel';
import { request } from 'node:https';
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { KubeCluster } from '../src/kube/cluster.js';
import { rawRequest } from '../src/kube/raw-request.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';

const requests = 300;
const namespace = 'bench-keep-alive';
const vm = 'desk';
const startPath = `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${vm}/start`;

let cluster: LocalCluster | undefined;
let connections = 0;

// Counts the new TCP connections of this process (the in-process simulator's too), from undici and node:https alike.
function countConnections(): void {
  diagnostics.subscribe('net.client.socket', () => connections++);
}

/** A PUT with node:https and client-node's agent, which is not kept alive: a new connection per request. */
async function putWithoutKeepAlive(kubeConfig: KubeConfig, path: string): Promise<number> {
  const options: import('node:https').RequestOptions = { method: 'PUT', headers: {} };
  await kubeConfig.applyToHTTPSOptions(options);
  const url = new URL(path, kubeConfig.getCurrentCluster()?.server);
  return await new Promise((resolve, reject) => {
    const req = request(
      url,
      { ...options, headers: { ...options.headers, 'content-type': 'application/json' } },
      (res) => {
        res.resume().on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

async function measure(run: () => Promise<unknown>): Promise<{ msPerRequest: number; connections: number }> {
  await run();
  const before = connections;
  const started = performance.now();
  for (let i = 0; i < requests; i++) await run();
  return { msPerRequest: (performance.now() - started) / requests, connections: connections - before };
}

function report(
  label: string,
  fresh: { msPerRequest: number; connections: number },
  kept: typeof fresh,
): void {
  console.info(
    `${label}, ${requests} sequential requests: new connection each ${fresh.msPerRequest.toFixed(2)} ms/request ` +
      `(${fresh.connections} connections); SDK ${kept.msPerRequest.toFixed(2)} ms/request ` +
      `(${kept.connections} connections); ratio ${(fresh.msPerRequest / kept.msPerRequest).toFixed(2)}×`,
  );
}

beforeAll(async () => {
  countConnections();
  cluster = await startLocalCluster();
  await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } });
  await new KubeCluster(cluster.kubeConfig).createVm(namespace, {
    metadata: { name: vm },
    spec: {
      runStrategy: 'Manual',
      template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
    },
  });
}, 900_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('connection reuse', () => {
  it('for API client calls (list Leases)', async () => {
    const kubeConfig = cluster?.kubeConfig;
    if (!kubeConfig) throw new Error('the local cluster is not started');
    const stock = kubeConfig.makeApiClient(CoordinationV1Api);
    const fresh = await measure(() => stock.listNamespacedLease({ namespace }));
    const sdk = new KubeCluster(kubeConfig);
    const kept = await measure(() => sdk.listLeases(namespace));
    report('list Leases', fresh, kept);
  });

  it('for the raw start subresource', async () => {
    const kubeConfig = cluster?.kubeConfig;
    if (!kubeConfig) throw new Error('the local cluster is not started');
    const fresh = await measure(() => putWithoutKeepAlive(kubeConfig, startPath));
    const kept = await measure(() => rawRequest(kubeConfig, 'PUT', startPath, {}).catch(() => undefined));
    report('PUT start', fresh, kept);
  });
});
