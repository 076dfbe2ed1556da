import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';

/** How a local process ended: its exit code, the signal that ended it, or why it never started. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (a command that does not exist, say). */
  startError?: Error;
}

/** A terminal size, as the resize channel sends it. */
export interface TerminalSize {
  Width: number;
  Height: number;
}

/** Options of {@link startLocalProcess}. */
export interface LocalProcessOptions {
  cwd: string;
  env: Record<string, string>;
  /** Run under a pseudo-terminal: output arrives on `stdout` only and {@link LocalProcess.resize} applies. */
  tty: boolean;
  /** End every process the command started once the command itself ends, as a container ends with its first process. */
  endGroupOnExit: boolean;
}

/** Emits `output` (`'stdout' | 'stderr'`, Buffer) and, once, `exit` ({@link ProcessExit}) after all output. */
export interface LocalProcess extends EventEmitter {
  /** Resolves once the process ended and its output was read to the end. */
  readonly exited: Promise<ProcessExit>;
  write(data: Buffer): void;
  endInput(): void;
  resize(size: TerminalSize): void;
  /** Sends `signal` to the process and every process it started (its process group). */
  kill(signal: NodeJS.Signals): void;
}

/** Quotes one word for `sh`. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

// util-linux `script` gives the command a pseudo-terminal without a native module; the wrapper first prints the
// terminal's device, in a control sequence that the agent takes out again, so resizes can reach it with `stty -F`.
function ttyCommand(command: string[]): string {
  return `printf '\\033]corral-tty;%s\\007' "$(tty)"; exec ${command.map(shellQuote).join(' ')}`;
}

// Input echoed by the terminal may come before the device name, so the name is found wherever it is.
const ttyMarkerStart = '\u001b]corral-tty;';
const ttyMarkerEnd = '\u0007';

/**
 * Starts `command` as a local process in `cwd` with exactly `env`, its input, output and error on pipes, or under
 * a pseudo-terminal when `tty` is set.
 */
export function startLocalProcess(command: string[], options: LocalProcessOptions): LocalProcess {
  const emitter = new EventEmitter() as LocalProcess;
  const [file = '', ...args] = command;
  const child: ChildProcess = options.tty
    ? spawn('script', ['-qfec', ttyCommand(command), '/dev/null'], {
        cwd: options.cwd,
        env: { ...options.env, SHELL: '/bin/sh' },
        detached: true,
      })
    : // Its own process group, so that ending it ends whatever it started, as a container runtime does.
      spawn(file, args, { cwd: options.cwd, env: options.env, detached: true });
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The whole group is gone already.
    }
  };
  if (options.endGroupOnExit) child.once('exit', () => signalGroup('SIGKILL'));
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, startError: error }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  exited.then((exit) => emitter.emit('exit', exit));
  let ttyPath: string | undefined;
  let ttyPrefix = options.tty ? Buffer.alloc(0) : undefined;
  let ttyKnown: () => void = () => {};
  const ttyFound = new Promise<void>((resolve) => {
    ttyKnown = resolve;
  });
  // Input and resizes take effect in the order they arrived, as one terminal's would; `stty` runs as a process.
  let inOrder = Promise.resolve();
  const afterEarlier = (step: () => void | Promise<void>) => {
    inOrder = inOrder.then(step);
  };

  const applySize = async (size: TerminalSize) => {
    await Promise.race([ttyFound, exited]);
    if (ttyPath === undefined) return;
    const cols = String(Math.max(1, Math.floor(size.Width)));
    const rows = String(Math.max(1, Math.floor(size.Height)));
    // A terminal that is already gone has nothing left to resize.
    await new Promise<void>((resolve) =>
      execFile('stty', ['-F', ttyPath as string, 'cols', cols, 'rows', rows], () => resolve()),
    );
  };

  child.stdout?.on('data', (chunk: Buffer) => {
    if (ttyPrefix === undefined) {
      emitter.emit('output', 'stdout', chunk);
      return;
    }
    ttyPrefix = Buffer.concat([ttyPrefix, chunk]);
    const text = ttyPrefix.toString('latin1');
    const start = text.indexOf(ttyMarkerStart);
    const end = start < 0 ? -1 : text.indexOf(ttyMarkerEnd, start);
    if (end < 0) return;
    ttyPath = text.slice(start + ttyMarkerStart.length, end);
    const rest = Buffer.concat([ttyPrefix.subarray(0, start), ttyPrefix.subarray(end + 1)]);
    ttyPrefix = undefined;
    ttyKnown();
    if (rest.length > 0) emitter.emit('output', 'stdout', rest);
  });
  child.stderr?.on('data', (chunk: Buffer) => emitter.emit('output', 'stderr', chunk));
  // A child that goes away while input is still being written is an ordinary end, not a crash of the agent.
  child.stdin?.on('error', () => {});

  Object.assign(emitter, {
    exited,
    write: (data: Buffer) =>
      afterEarlier(() => {
        if (child.stdin?.writable) child.stdin.write(data);
      }),
    endInput: () => afterEarlier(() => void child.stdin?.end()),
    resize: (size: TerminalSize) => {
      if (options.tty) afterEarlier(() => applySize(size));
    },
    kill: signalGroup,
  });
  return emitter;
}
