import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../src/testing/wait-for.js';
import type { StormEvent } from './claim-storm.js';

/** What a storm process is told on its command line. */
export interface StormProcessConfig {
  kubeconfigPath: string;
  namespace: string;
  pools: string[];
  identities: string[];
  seed: number;
  boundMs: number;
}

/** A client process running a claim storm, from the test's side. */
export interface StormProcess {
  /** Kills it with `SIGKILL`, wherever its calls are; resolves once it is gone. */
  kill(): Promise<void>;
  /** Asks it to stop: it settles what its identities do not know, writes its summary and exits. */
  stop(): Promise<void>;
  /** Resolves with the first event from now on that `matches`, as `describe` names it on a timeout. */
  next(describe: string, matches: (event: StormEvent) => boolean, timeoutMs?: number): Promise<StormEvent>;
}

const entry = fileURLToPath(new URL('./storm-process.ts', import.meta.url));
const resolveHook = fileURLToPath(new URL('./resolve-ts.ts', import.meta.url));

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * Starts a storm in a process of its own (plain Node running this project's TypeScript), and hands every event
 * it writes to `record` in the order written.
 */
export function startStormProcess(
  config: StormProcessConfig,
  record: (event: StormEvent) => void,
): StormProcess {
  const child = spawn(process.execPath, ['--import', resolveHook, entry, JSON.stringify(config)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const received: StormEvent[] = [];
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const event = JSON.parse(line) as StormEvent;
    received.push(event);
    record(event);
  });
  const exited = exitOf(child);
  return {
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.stdin?.end('stop\n');
      const { code, signal } = await exited;
      if (code !== 0) throw new Error(`the storm process ended with ${signal ?? `code ${code}`}: ${stderr}`);
    },
    async next(describe, matches, timeoutMs = 60_000) {
      const from = received.length;
      return await waitFor(
        () => {
          if (child.exitCode !== null) throw new Error(`the storm process exited: ${stderr}`);
          return received.slice(from).find(matches);
        },
        { describe, timeoutMs },
      );
    },
  };
}
