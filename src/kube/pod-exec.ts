import type { IncomingMessage } from 'node:http';
import { Duplex, PassThrough } from 'node:stream';
import { ApiException, Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
// not re-exported by the package's index; its constructor takes the socket factory used below
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js';
import WebSocket from 'ws';

/**
 * A process in a Pod's container, as a duplex stream: what is written goes to its input, what it prints (output
 * and errors together, as a TTY merges them) is read. Ending the stream's writable side ends the process's input
 * and keeps reading what it prints until it exits (the `v5.channel.k8s.io` close message). `resize` tells it the
 * terminal's size, and `exitCode` settles once it ends.
 *
 * @category ct-pools
 */
export interface TerminalStream extends Duplex {
  /** Tells the process its terminal's size. */
  resize(size: { columns: number; rows: number }): void;
  /** The process's exit code once it ends (0 when it succeeded); -1 when the connection ended without one. */
  readonly exitCode: Promise<number>;
}

/** What a `pods/exec` terminal runs, and where. */
export interface PodExecTarget {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  /** Run it on a terminal; without one its input and output are pipes, as `kubectl exec -i` without `-t`. @defaultValue true */
  tty?: boolean;
  columns: number;
  rows: number;
}

function exitCodeOf(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((candidate) => candidate.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : 1;
}

// client-node sends the size of an output stream that has rows, columns and emits 'resize', as a TTY does
class SizedOutput extends PassThrough {
  rows: number;
  columns: number;

  constructor(columns: number, rows: number) {
    super();
    this.columns = columns;
    this.rows = rows;
  }
}

/**
 * A websocket that turns a refused upgrade into the apiserver's own answer (client-node's keeps only its status,
 * so a 403 would not say which permission is missing).
 */
function socketKeepingRefusals(
  url: string,
  protocols: string[],
  options: WebSocket.ClientOptions,
): WebSocket {
  const socket = new WebSocket(url, protocols, options);
  socket.once('unexpected-response', (request, response: IncomingMessage) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.once('end', () => {
      request.destroy();
      const status = response.statusCode ?? 500;
      socket.emit(
        'error',
        new ApiException(status, `HTTP ${status}`, Buffer.concat(chunks).toString('utf8'), {}),
      );
    });
  });
  return socket;
}

// client-node rejects with the websocket's error event; the error it carries is the apiserver's answer
function errorOfEvent(error: unknown): unknown {
  return error instanceof Object && 'error' in error && error.error instanceof Error ? error.error : error;
}

/**
 * Runs `command` in a Pod's container through the apiserver's `pods/exec` subresource (a websocket the
 * apiserver forwards to the node), with stdin, and with a TTY when `tty` is set, as `kubectl exec -i[t]` does.
 */
export async function openPodExec(kubeConfig: KubeConfig, target: PodExecTarget): Promise<TerminalStream> {
  const input = new PassThrough();
  // only a terminal's output has a size for client-node to send
  const tty = target.tty ?? true;
  const output = tty ? new SizedOutput(target.columns, target.rows) : new PassThrough();
  let settle: (code: number) => void = () => undefined;
  const exitCode = new Promise<number>((resolve) => {
    settle = resolve;
  });
  const socket = await new Exec(kubeConfig, new WebSocketHandler(kubeConfig, socketKeepingRefusals))
    .exec(
      target.namespace,
      target.pod,
      target.container,
      target.command,
      output,
      // without a terminal its errors come apart from its output; the stream merges them as a terminal would
      tty ? null : output,
      input,
      tty,
      (status) => settle(exitCodeOf(status)),
    )
    .catch((error: unknown) => {
      throw errorOfEvent(error);
    });
  socket.on('close', () => {
    settle(-1);
    output.end();
  });
  const stream = Duplex.from({ readable: output, writable: input }) as TerminalStream;
  Object.defineProperty(stream, 'exitCode', { value: exitCode });
  stream.resize = ({ columns, rows }) => {
    if (!(output instanceof SizedOutput)) return;
    output.columns = columns;
    output.rows = rows;
    output.emit('resize');
  };
  stream.on('close', () => socket.close());
  return stream;
}
