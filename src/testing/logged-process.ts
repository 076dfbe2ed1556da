import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

/**
 * Starts a process with its stdout and stderr appended to one log file (a restarted process writes after the log
 * of the one it replaces). The log ends once the process has closed both: each stream alone ending it would leave
 * the other writing after the end, an error that ends the process that started it.
 */
export function startLoggedProcess(binary: string, args: string[], logPath: string): ChildProcess {
  const log = createWriteStream(logPath, { flags: 'a' });
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  child.once('close', () => log.end());
  return child;
}
