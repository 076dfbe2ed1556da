import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { gunzipSync } from 'node:zlib';

/** One create, update or patch of an object in KubeVirt's API groups: what a client sent and what it was answered. @category testing */
export interface KubevirtWrite {
  verb: 'create' | 'update' | 'patch';
  /** `kubevirt.io` or `clone.kubevirt.io`. */
  group: string;
  /** The version the request was sent to. */
  version: string;
  /** The plural, such as `virtualmachines`. */
  resource: string;
  /** `status` for a status-subresource write. */
  subresource: string | undefined;
  namespace: string;
  /** The object's name (for a create, the name in the body). */
  name: string;
  /** The HTTP status of the answer. */
  code: number;
  /** The request's content type: for a patch, which kind of patch. */
  contentType: string;
  /** What was sent, as the client sent it: the object, or the patch (an array for a JSON patch). */
  request: unknown;
  /** The object as the apiserver stored it, from its answer; the `Status` of a refusal. */
  stored: unknown;
}

/** A TLS proxy in front of the apiserver that keeps every KubeVirt write passing through it. */
export interface KubevirtWriteRecorder {
  /** `https://127.0.0.1:<port>`: the address clients use instead of the apiserver's. */
  url: string;
  writes(): KubevirtWrite[];
  close(): Promise<void>;
}

const writePath =
  /^\/apis\/(kubevirt\.io|clone\.kubevirt\.io)\/([^/]+)\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/?]+))?(?:\/([^/?]+))?/;
const verbs: Record<string, KubevirtWrite['verb']> = { POST: 'create', PUT: 'update', PATCH: 'patch' };

function parseBody(bytes: Buffer, encoding: string | undefined): unknown {
  const text = (encoding === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/**
 * Starts the recording proxy. It forwards every request, watches and upgrades included, with the caller's own
 * headers, so it suits callers that authenticate with a bearer token (a client certificate ends at the proxy).
 */
export async function startKubevirtWriteRecorder(options: {
  apiserver: string;
  caPem: string;
  servingCertPem: string;
  servingKeyPem: string;
}): Promise<KubevirtWriteRecorder> {
  const upstream = new URL(options.apiserver);
  const writes: KubevirtWrite[] = [];
  const sockets = new Set<Socket>();

  const server = createHttpsServer(
    { cert: options.servingCertPem, key: options.servingKeyPem },
    (incoming, outgoing) => {
      const match = writePath.exec(incoming.url ?? '');
      const verb = verbs[incoming.method ?? ''];
      const recorded = match && verb ? { match, verb, sent: [] as Buffer[] } : undefined;
      const forwarded = httpsRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: upstream.host },
          ca: options.caPem,
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          if (!recorded) {
            answer.pipe(outgoing);
            return;
          }
          void readAll(answer).then((bytes) => {
            const [, group = '', version = '', namespace = '', resource = '', nameInPath, subresource] =
              recorded.match;
            const request = parseBody(Buffer.concat(recorded.sent), incoming.headers['content-encoding']);
            const bodyName = (request as { metadata?: { name?: string } } | undefined)?.metadata?.name;
            writes.push({
              verb: recorded.verb,
              group,
              version,
              resource,
              subresource,
              namespace,
              name: nameInPath ?? bodyName ?? '',
              code: answer.statusCode ?? 0,
              contentType: incoming.headers['content-type'] ?? '',
              request,
              stored: parseBody(bytes, answer.headers['content-encoding']),
            });
            outgoing.end(bytes);
          });
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      incoming.on('data', (chunk: Buffer) => recorded?.sent.push(chunk));
      incoming.pipe(forwarded);
    },
  );

  // exec, attach and the consoles: the upgrade is passed through byte for byte
  server.on('upgrade', (incoming: IncomingMessage, socket: Socket, head: Buffer) => {
    const upstreamSocket = tlsConnect({
      host: upstream.hostname,
      port: Number(upstream.port),
      ca: options.caPem,
      servername: 'localhost',
    });
    upstreamSocket.on('secureConnect', () => {
      const lines = [`${incoming.method} ${incoming.url} HTTP/1.1`];
      for (let index = 0; index < incoming.rawHeaders.length; index += 2) {
        const name = incoming.rawHeaders[index] ?? '';
        lines.push(
          `${name}: ${name.toLowerCase() === 'host' ? upstream.host : incoming.rawHeaders[index + 1]}`,
        );
      }
      upstreamSocket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) upstreamSocket.write(head);
      upstreamSocket.pipe(socket);
      socket.pipe(upstreamSocket);
    });
    const end = () => {
      socket.destroy();
      upstreamSocket.destroy();
    };
    upstreamSocket.on('error', end);
    socket.on('error', end);
    socket.on('close', end);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    writes: () => [...writes],
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
