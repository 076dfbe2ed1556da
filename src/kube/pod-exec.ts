import { Duplex, PassThrough } from 'node:stream';
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';

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
  const socket = await new Exec(kubeConfig).exec(
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
  );
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
