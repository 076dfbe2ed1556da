import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('./relay-reader-process.ts', import.meta.url));
const resolveHook = fileURLToPath(new URL('../../test/faults/support/resolve-ts.ts', import.meta.url));

/** The cases the reader knows: each console read directly and through the broker. */
export type ReaderJob = 'rdpDirect' | 'rdpThroughBroker' | 'vncDirect' | 'vncThroughBroker';

/** What the reader process is told once, at its start. */
export interface ReaderSetting {
  brokerUrl: string;
  namespace: string;
  member: string;
  /** The guest's address, where its RDP server listens on 3389. */
  ip: string;
  kubeconfigPath: string;
  rdpBytes: number;
  vncFrames: number;
}

/** One timed read, and the reader's CPU time over it. */
export interface ReaderRun {
  /** From the ask to the first chunk. */
  firstByteMs: number;
  /** From the first chunk to the last byte. */
  seconds: number;
  /** The bytes after the first chunk, which came in `seconds`. */
  streamedBytes: number;
  /** All the bytes read. */
  bytes: number;
  cpuMs: number;
}

/** The reader in a process of its own, and how to run a case and stop it. */
export interface ReaderProcess {
  pid: number | undefined;
  /** Opens the case's console and does its handshake, calls `before`, has the bytes read, then calls `after`. */
  run(job: ReaderJob, around: { before(): void; after(): void }): Promise<ReaderRun>;
  stop(): Promise<void>;
}

/** Starts the reader process (the bench's browser) and resolves once it has loaded. */
export async function startReaderProcess(setting: ReaderSetting): Promise<ReaderProcess> {
  const child = spawn(
    process.execPath,
    [
      // the broker's young generation: the reader stands in for a browser, whose websocket is native code, so its
      // reads should cost as little as Node lets them, the same for every case
      '--max-semi-space-size=8',
      '--experimental-transform-types',
      '--no-warnings',
      '--import',
      resolveHook,
      entry,
      JSON.stringify(setting),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  const nextLine = () =>
    Promise.race([
      once(lines, 'line').then(([line]) => line as string),
      exited.then(() => {
        throw new Error('the reader process exited');
      }),
    ]);
  await nextLine();
  return {
    pid: child.pid,
    async run(job, around) {
      child.stdin.write(`${job}\n`);
      await nextLine();
      around.before();
      child.stdin.write('go\n');
      const result = JSON.parse(await nextLine()) as ReaderRun;
      around.after();
      return result;
    },
    async stop() {
      child.stdin.end();
      await exited;
    },
  };
}
