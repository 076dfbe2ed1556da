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
}

/** Emits `output` (`'stdout' | 'stderr'`, Buffer) and, once, `exit` ({@link ProcessExit}) after all output. */
export interface LocalProcess extends EventEmitter {
  readonly pid: number | undefined;
  /** Resolves once the process ended and its output was read to the end. */
  readonly exited: Promise<ProcessExit>;
  write(data: Buffer): void;
  endInput(): void;
  resize(size: TerminalSize): void;
  kill(signal: NodeJS.Signals): void;
}

/** Quotes one word for `sh`. */
function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

// util-linux `script` gives the command a pseudo-terminal without a native module; the wrapper first prints the
// terminal's device so that resizes can reach it with `stty -F`.
function ttyCommand(command: string[]): string {
  return `printf '%s\\n' "$(tty)"; exec ${command.map(shellQuote).join(' ')}`;
}

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
      })
    : spawn(file, args, { cwd: options.cwd, env: options.env });
  let ttyPath: string | undefined;
  let pendingSize: TerminalSize | undefined;
  let ttyPrefix = options.tty ? Buffer.alloc(0) : undefined;

  const applySize = (size: TerminalSize) => {
    if (ttyPath === undefined) {
      pendingSize = size;
      return;
    }
    const cols = String(Math.max(1, Math.floor(size.Width)));
    const rows = String(Math.max(1, Math.floor(size.Height)));
    // A terminal that is already gone has nothing left to resize.
    execFile('stty', ['-F', ttyPath, 'cols', cols, 'rows', rows], () => {});
  };

  child.stdout?.on('data', (chunk: Buffer) => {
    if (ttyPrefix === undefined) {
      emitter.emit('output', 'stdout', chunk);
      return;
    }
    ttyPrefix = Buffer.concat([ttyPrefix, chunk]);
    const newline = ttyPrefix.indexOf(10);
    if (newline < 0) return;
    ttyPath = ttyPrefix.subarray(0, newline).toString('utf8').replace(/\r$/, '');
    const rest = ttyPrefix.subarray(newline + 1);
    ttyPrefix = undefined;
    if (pendingSize) applySize(pendingSize);
    if (rest.length > 0) emitter.emit('output', 'stdout', rest);
  });
  child.stderr?.on('data', (chunk: Buffer) => emitter.emit('output', 'stderr', chunk));
  // A child that goes away while input is still being written is an ordinary end, not a crash of the agent.
  child.stdin?.on('error', () => {});

  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('error', (error) => resolve({ code: null, signal: null, startError: error }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  exited.then((exit) => emitter.emit('exit', exit));

  Object.assign(emitter, {
    pid: child.pid,
    exited,
    write: (data: Buffer) => {
      if (child.stdin?.writable) child.stdin.write(data);
    },
    endInput: () => child.stdin?.end(),
    resize: (size: TerminalSize) => {
      if (options.tty) applySize(size);
    },
    kill: (signal: NodeJS.Signals) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  });
  return emitter;
}
