import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { VdiError } from '../errors.js';
import { commandNotFoundError } from './install-hints.js';

/** How a started program ended. @category connect */
export interface ProcessExit {
  /** The program's exit code; a program ended by a signal reports 128 + the signal's number, as shells do. */
  exitCode: number;
  /** The signal that ended the program, if one did. */
  signal: NodeJS.Signals | null;
  /** Set when the SDK asked the program to stop: the abort signal fired, or this process got SIGINT. */
  stoppedBy?: 'abort' | 'sigint';
}

/** Where a line of a program's output came from. @category connect */
export type OutputStream = 'stdout' | 'stderr';

/** Options of {@link runProcess}. */
export interface RunProcessOptions {
  /** `inherit` hands the terminal to the program; `pipe` streams its output, line by line, to `onOutput`. */
  stdio: 'inherit' | 'ignore' | 'pipe';
  /** Why the program is run, for the message when it is missing ("to open VNC"). */
  neededFor: string;
  /** Asks the program to stop. */
  signal?: AbortSignal;
  /** Receives the program's output line by line, with `stdio: 'pipe'`. */
  onOutput?: (line: string, stream: OutputStream) => void;
  /** How long a program may take to end after SIGINT before it gets SIGTERM, and after that SIGKILL. */
  stopGraceMs?: number;
}

const defaultStopGraceMs = 3000;

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * The path of `program` as the PATH resolves it, or `undefined` when no executable file of that name is on it.
 * A name with a slash is taken as a path.
 */
export async function findExecutable(program: string): Promise<string | undefined> {
  if (program.includes('/')) return (await isExecutableFile(program)) ? program : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, program);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function forwardLines(
  stream: NodeJS.ReadableStream | null,
  name: OutputStream,
  onOutput: RunProcessOptions['onOutput'],
): void {
  if (stream === null) return;
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (pending + chunk).split(/\r?\n/);
    pending = lines.pop() ?? '';
    for (const line of lines) onOutput?.(line, name);
  });
  stream.on('end', () => {
    if (pending !== '') onOutput?.(pending, name);
  });
}

/**
 * Starts `argv` without a shell and resolves when it has ended, with its exit code. The abort signal, or SIGINT
 * to this process while the program runs, asks the program to stop: SIGINT first, then SIGTERM and SIGKILL
 * after `stopGraceMs` each.
 *
 * @throws {@link VdiError} `COMMAND_NOT_FOUND` when the program is not on the PATH (the message says how to
 *   install it); `INTERNAL` when it cannot be started for another reason; the signal's reason when it was
 *   aborted before the start.
 */
export async function runProcess(
  argv: readonly [string, ...string[]],
  options: RunProcessOptions,
): Promise<ProcessExit> {
  const [program, ...args] = argv;
  const { signal, stopGraceMs = defaultStopGraceMs } = options;
  signal?.throwIfAborted();
  const path = await findExecutable(program);
  if (path === undefined) throw commandNotFoundError(program, options.neededFor);
  signal?.throwIfAborted();

  const child = spawn(path, args, {
    argv0: program,
    stdio: options.stdio === 'pipe' ? ['ignore', 'pipe', 'pipe'] : options.stdio,
  });
  if (options.stdio === 'pipe') {
    forwardLines(child.stdout, 'stdout', options.onOutput);
    forwardLines(child.stderr, 'stderr', options.onOutput);
  }

  let stoppedBy: ProcessExit['stoppedBy'];
  const timers: NodeJS.Timeout[] = [];
  const stop = (by: 'abort' | 'sigint') => {
    if (stoppedBy !== undefined) return;
    stoppedBy = by;
    child.kill('SIGINT');
    timers.push(setTimeout(() => child.kill('SIGTERM'), stopGraceMs));
    timers.push(setTimeout(() => child.kill('SIGKILL'), 2 * stopGraceMs));
  };
  const onAbort = () => stop('abort');
  const onSigint = () => stop('sigint');
  signal?.addEventListener('abort', onAbort, { once: true });
  process.on('SIGINT', onSigint);

  try {
    return await new Promise<ProcessExit>((resolve, reject) => {
      child.once('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') reject(commandNotFoundError(program, options.neededFor));
        else
          reject(new VdiError('INTERNAL', `Could not start ${program}: ${error.message}`, { cause: error }));
      });
      child.once('close', (code, exitSignal) => {
        const exitCode = code ?? 128 + (exitSignal ? (osConstants.signals[exitSignal] ?? 0) : 0);
        resolve({ exitCode, signal: exitSignal, ...(stoppedBy ? { stoppedBy } : {}) });
      });
    });
  } finally {
    for (const timer of timers) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    process.off('SIGINT', onSigint);
  }
}
