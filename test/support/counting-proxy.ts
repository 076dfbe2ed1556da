// A TLS proxy in front of the apiserver that counts what a client asks, request by request: a view of a process
// from outside it, such as `broker serve`, beside what the process says of itself.
import { writeFileSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { LocalClusterAccess } from '../../src/testing/local-cluster.js';

/** One request that passed through the proxy. */
export interface ProxiedRequest {
  /** Kubernetes' verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`. */
  verb: string;
  /** `leases`, `virtualmachines`, …, with `/<subresource>` when there is one. */
  resource: string;
  namespace: string;
  name: string;
  /** The list's or watch's label selector; `''` without one. */
  labelSelector: string;
  /** `performance.now()` in this process when the request came in. */
  at: number;
}

/** The proxy, and a kubeconfig file whose client reaches the apiserver through it. */
export interface CountingProxy {
  kubeconfigPath: string;
  /** Every request so far, in the order they came. */
  requests(): ProxiedRequest[];
  close(): Promise<void>;
}

const resourcePath =
  /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/?]+)(?:\/([^/?]+))?(?:\/([^/?]+))?/;

function describe(method: string, url: string, at: number): ProxiedRequest {
  const [path = '', query = ''] = url.split('?');
  const [, namespace = '', resource = '', name = '', subresource] = resourcePath.exec(path) ?? [];
  const parameters = new URLSearchParams(query);
  const watching = parameters.get('watch') === 'true';
  const verbs: Record<string, string> = {
    GET: name ? 'get' : watching ? 'watch' : 'list',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: 'delete',
  };
  return {
    verb: verbs[method] ?? method.toLowerCase(),
    resource: subresource ? `${resource}/${subresource}` : resource || path,
    namespace,
    name,
    labelSelector: parameters.get('labelSelector') ?? '',
    at,
  };
}

/**
 * Starts the proxy on loopback with the cluster's serving certificate, and writes a kubeconfig of the administrator
 * that names it (its bearer token passes through; a client certificate would end at the proxy).
 */
export async function startCountingProxy(
  cluster: LocalClusterAccess,
  kubeconfigPath: string,
): Promise<CountingProxy> {
  const upstream = new URL(cluster.server);
  const { caPem, servingCertPem, servingKeyPem } = cluster.certificates;
  const seen: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer({ cert: servingCertPem, key: servingKeyPem }, (incoming, outgoing) => {
    const described = describe(incoming.method ?? 'GET', incoming.url ?? '', performance.now());
    seen.push(described);
    // a create names its object in the body
    if (described.verb === 'create') {
      const sent: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => sent.push(chunk));
      incoming.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(sent).toString('utf8')) as { metadata?: { name?: string } };
          described.name = body.metadata?.name ?? '';
        } catch {
          // not JSON: the name stays unknown
        }
      });
    }
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: upstream.host },
        ca: caPem,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        // a watch that has no event yet is open all the same: its client must hear so now, not with the first event
        outgoing.flushHeaders();
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    outgoing.on('close', () => forwarded.destroy());
    incoming.pipe(forwarded);
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const kubeConfig = JSON.parse(cluster.kubeConfig.exportConfig()) as {
    clusters: Array<{ cluster: { server: string } }>;
  };
  for (const entry of kubeConfig.clusters) entry.cluster.server = `https://127.0.0.1:${port}`;
  writeFileSync(kubeconfigPath, JSON.stringify(kubeConfig), { mode: 0o600 });
  return {
    kubeconfigPath,
    requests: () => [...seen],
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
