import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { type WebSocket, WebSocketServer } from 'ws';
import { createApiserverFacingServer } from '../apiserver-facing-server.js';
import type { LocalProcess, TerminalSize } from './local-process.js';
import type { ContainerRecord, LogLine, PodSandbox } from './pod-sandbox.js';
import {
  chooseStreamProtocol,
  readTerminalSize,
  type StreamEnd,
  sendEnd,
  sendFrame,
  servedStreamProtocols,
  streamChannel,
} from './stream-protocol.js';

/** Options of {@link startKubeletServer}. */
export interface KubeletServerOptions {
  servingCertPem: string;
  servingKeyPem: string;
  /** The CA that signed the apiserver's kubelet client certificate. */
  caPem: string;
  /** The apiserver's kubelet client certificate: the only caller served. */
  clientCertPem: string;
  /** The sandbox of a running Pod, by namespace and name. */
  sandboxOf(namespace: string, name: string): PodSandbox | undefined;
  /** After how many output bytes a stream of the Pod is cut (its `drop-stream-after-bytes` knob). */
  dropAfterBytes(sandbox: PodSandbox): number | undefined;
  log: (line: string) => void;
}

/** A running kubelet endpoint server. */
export interface KubeletServer {
  port: number;
  close(): Promise<void>;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const statusTexts: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
};

const routePattern = /^\/(exec|attach|containerLogs)\/([^/]+)\/([^/]+)\/(?:[^/]+\/)?([^/]+)$/;

interface Route {
  kind: 'exec' | 'attach' | 'containerLogs';
  sandbox: PodSandbox;
  container: ContainerRecord;
  query: URLSearchParams;
}

function resolveRoute(url: URL, options: KubeletServerOptions): Route {
  const match = routePattern.exec(url.pathname);
  if (!match) throw new HttpFailure(404, `no kubelet endpoint at ${url.pathname}`);
  const [, kind, namespace = '', name = '', containerName = ''] = match.map((part) =>
    decodeURIComponent(part),
  );
  const sandbox = options.sandboxOf(namespace, name);
  if (!sandbox) throw new HttpFailure(404, `pod ${namespace}/${name} is not running on this node`);
  const container = sandbox.containers.get(containerName);
  if (!container)
    throw new HttpFailure(404, `container "${containerName}" not found in pod ${namespace}/${name}`);
  return { kind: kind as Route['kind'], sandbox, container, query: url.searchParams };
}

function streamOptionsOf(query: URLSearchParams) {
  const tty = query.get('tty') === '1';
  const options = {
    stdin: query.get('input') === '1',
    stdout: query.get('output') === '1',
    // As the kubelet: a terminal has no separate error stream.
    stderr: query.get('error') === '1' && !tty,
    tty,
  };
  if (!options.stdin && !options.stdout && !options.stderr)
    throw new HttpFailure(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return options;
}

function rejectUpgrade(socket: Duplex, failure: HttpFailure): void {
  const body = failure.message;
  socket.end(
    `HTTP/1.1 ${failure.status} ${statusTexts[failure.status] ?? 'Error'}\r\ncontent-type: text/plain\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Wires a websocket to a process's or container's streams; cuts it after `dropAfter` output bytes. */
function pipeStreams(
  socket: WebSocket,
  options: ReturnType<typeof streamOptionsOf>,
  target: { write(data: Buffer): void; endInput(): void; resize(size: TerminalSize): void },
  dropAfter: number | undefined,
  onDrop: () => void,
) {
  let sent = 0;
  let dropped = false;
  const drop = () => {
    dropped = true;
    socket.terminate();
    onDrop();
  };
  socket.on('message', (data: Buffer) => {
    const channel = data[0];
    const payload = data.subarray(1);
    if (channel === streamChannel.stdin && options.stdin) target.write(payload);
    // v5: the client ended its input and still reads, so the command sees the end of its input and runs on
    else if (channel === streamChannel.close && payload[0] === streamChannel.stdin) target.endInput();
    else if (channel === streamChannel.resize) {
      const size = readTerminalSize(payload);
      if (size) target.resize(size);
    }
  });
  // The kubelet opens with an empty frame on the first stream it serves, so the client knows it is connected.
  const first = options.stdout
    ? streamChannel.stdout
    : options.stderr
      ? streamChannel.stderr
      : streamChannel.error;
  sendFrame(socket, first, Buffer.alloc(0));
  if (dropAfter === 0) drop();
  return {
    output: (stream: 'stdout' | 'stderr', chunk: Buffer) => {
      if (dropped || socket.readyState !== socket.OPEN) return;
      const channel = stream === 'stdout' ? streamChannel.stdout : streamChannel.stderr;
      if (
        (stream === 'stdout' && !options.stdout) ||
        (stream === 'stderr' && !options.stderr && !options.tty)
      )
        return;
      const allowed = dropAfter === undefined ? chunk.length : Math.min(chunk.length, dropAfter - sent);
      const outChannel = options.tty ? streamChannel.stdout : channel;
      if (allowed > 0) sendFrame(socket, outChannel, chunk.subarray(0, allowed));
      sent += allowed;
      if (dropAfter !== undefined && sent >= dropAfter) drop();
    },
    isDropped: () => dropped,
  };
}

function endOf(exit: Awaited<LocalProcess['exited']>): StreamEnd {
  if (exit.startError) {
    return {
      kind: 'internal-error',
      message: `error executing command in container: exec failed: ${exit.startError.message}`,
    };
  }
  if (exit.code === 0) return { kind: 'success' };
  return { kind: 'exit-code', exitCode: exit.code ?? 128 };
}

function serveExec(socket: WebSocket, route: Route, options: KubeletServerOptions): void {
  const streams = streamOptionsOf(route.query);
  const command = route.query.getAll('command');
  const started = route.sandbox.exec(route.container, command, streams.tty);
  const wired = pipeStreams(socket, streams, started, options.dropAfterBytes(route.sandbox), () =>
    started.kill('SIGKILL'),
  );
  started.on('output', wired.output);
  socket.on('close', () => {
    started.endInput();
    // A client that went away hangs up the command, as closing a terminal does.
    started.kill('SIGHUP');
  });
  void started.exited.then((exit) => {
    if (!wired.isDropped() && socket.readyState === socket.OPEN) sendEnd(socket, endOf(exit));
  });
}

function serveAttach(socket: WebSocket, route: Route, options: KubeletServerOptions): void {
  const streams = streamOptionsOf(route.query);
  const { container } = route;
  const main = container.process;
  if (!main) {
    sendEnd(socket, { kind: 'internal-error', message: `container ${container.name} is not running` });
    return;
  }
  const target = {
    write: (data: Buffer) => {
      if (container.spec.stdin) main.write(data);
    },
    // the container's input is shared by every attached client: one that ends its own leaves it open
    endInput: () => {},
    resize: (size: TerminalSize) => main.resize(size),
  };
  const wired = pipeStreams(socket, streams, target, options.dropAfterBytes(route.sandbox), () => {});
  const onExit = () => {
    if (!wired.isDropped() && socket.readyState === socket.OPEN) sendEnd(socket, { kind: 'success' });
  };
  container.on('output', wired.output);
  container.once('exit', onExit);
  socket.on('close', () => {
    container.off('output', wired.output);
    container.off('exit', onExit);
  });
}

function formatLine(line: LogLine, timestamps: boolean): string {
  return `${timestamps ? `${line.time.toISOString()} ` : ''}${line.text}\n`;
}

function serveLogs(route: Route, response: ServerResponse): void {
  const { container, sandbox, query } = route;
  const podName = sandbox.pod.metadata?.name ?? '';
  if (!container.everStarted) {
    const reason = container.state.kind === 'waiting' ? container.state.reason : 'ContainerCreating';
    throw new HttpFailure(
      400,
      `container "${container.name}" in pod "${podName}" is waiting to start: ${reason}`,
    );
  }
  const previous = query.get('previous') === 'true';
  if (previous && container.restartCount === 0)
    throw new HttpFailure(
      400,
      `previous terminated container "${container.name}" in pod "${podName}" not found`,
    );
  const follow = query.get('follow') === 'true' && !previous;
  const timestamps = query.get('timestamps') === 'true';
  const tail = query.get('tailLines');
  const limit = query.get('limitBytes');
  const sinceSeconds = query.get('sinceSeconds');
  const sinceTime = query.get('sinceTime');
  let since = sinceTime ? Date.parse(sinceTime) : Number.NEGATIVE_INFINITY;
  if (sinceSeconds) since = Date.now() - Number(sinceSeconds) * 1000;
  let lines = (previous ? container.previousLog : container.log).filter(
    (line) => line.time.getTime() >= since,
  );
  if (tail !== null) lines = lines.slice(Math.max(0, lines.length - Number(tail)));
  let budget = limit === null ? Number.POSITIVE_INFINITY : Number(limit);
  response.writeHead(200, { 'content-type': 'text/plain' });
  const write = (line: LogLine) => {
    if (budget <= 0) return false;
    const text = Buffer.from(formatLine(line, timestamps));
    response.write(text.subarray(0, Math.min(text.length, budget)));
    budget -= text.length;
    return budget > 0;
  };
  for (const line of lines) if (!write(line)) return void response.end();
  if (!follow || container.state.kind !== 'running') return void response.end();
  const onLog = (line: LogLine) => {
    if (!write(line)) finish();
  };
  const finish = () => {
    container.off('log', onLog);
    container.off('exit', finish);
    response.end();
  };
  container.on('log', onLog);
  container.once('exit', finish);
  response.on('close', finish);
}

/**
 * Serves the kubelet endpoints the apiserver proxies to, over TLS on a free port of 127.0.0.1: `exec` and `attach`
 * (websocket stream protocol) and `containerLogs`. Only the apiserver's kubelet client certificate is served.
 */
export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const expected = new X509Certificate(options.clientCertPem).fingerprint256;
  const isApiserver = (socket: Socket) => {
    const tls = socket as TLSSocket;
    return tls.authorized === true && tls.getPeerX509Certificate()?.fingerprint256 === expected;
  };
  const sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => chooseStreamProtocol(offered) ?? false,
  });

  const server: Server = createApiserverFacingServer(
    { certPem: options.servingCertPem, keyPem: options.servingKeyPem, clientCaPem: options.caPem },
    (request: IncomingMessage, response: ServerResponse) => {
      const url = new URL(request.url ?? '/', 'https://127.0.0.1');
      try {
        if (!isApiserver(request.socket)) throw new HttpFailure(401, 'Unauthorized');
        if (url.pathname === '/healthz') return void response.writeHead(200).end('ok');
        const route = resolveRoute(url, options);
        if (route.kind !== 'containerLogs' || request.method !== 'GET')
          throw new HttpFailure(400, `${route.kind} needs a websocket upgrade`);
        serveLogs(route, response);
      } catch (error) {
        const failure = error instanceof HttpFailure ? error : new HttpFailure(400, String(error));
        if (!response.headersSent) response.writeHead(failure.status, { 'content-type': 'text/plain' });
        response.end(failure.message);
      }
    },
  );

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'https://127.0.0.1');
    try {
      if (!isApiserver(request.socket)) throw new HttpFailure(401, 'Unauthorized');
      const route = resolveRoute(url, options);
      if (route.kind === 'containerLogs')
        throw new HttpFailure(400, 'containerLogs is not a stream endpoint');
      streamOptionsOf(route.query);
      if (request.headers.upgrade?.toLowerCase() !== 'websocket')
        throw new HttpFailure(
          400,
          `only websocket streams are served (${servedStreamProtocols.join(', ')}), not SPDY`,
        );
      const offered = String(request.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((protocol) => protocol.trim())
        .filter((protocol) => protocol !== '');
      if (offered.length > 0 && chooseStreamProtocol(offered) === undefined)
        throw new HttpFailure(400, `requested protocol(s) are not supported: ${offered.join(', ')}`);
      if (route.kind === 'exec' && route.query.getAll('command').length === 0)
        throw new HttpFailure(400, 'you must specify a command');
      if (route.container.state.kind !== 'running')
        throw new HttpFailure(400, `container ${route.container.name} is not running`);
      sockets.handleUpgrade(request, socket, head, (websocket) => {
        options.log(`${route.kind} ${url.pathname}${url.search}`);
        if (route.kind === 'exec') serveExec(websocket, route, options);
        else serveAttach(websocket, route, options);
      });
    } catch (error) {
      rejectUpgrade(socket, error instanceof HttpFailure ? error : new HttpFailure(400, String(error)));
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of sockets.clients) client.terminate();
        sockets.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
