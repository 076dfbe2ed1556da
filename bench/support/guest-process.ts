import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('./rdp-guest-process.ts', import.meta.url));
const resolveHook = fileURLToPath(new URL('../../test/faults/support/resolve-ts.ts', import.meta.url));

/** A guest running in a child process, and how to stop it. */
export interface GuestProcess {
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts the fake RDP guest that streams the bytes asked for (`startFakeRdpGuest(host, 'stream')`) in a process of
 * its own on `host:3389`, so that neither the bench's reader nor the broker shares its CPU time.
 */
export async function startRdpGuestProcess(host: string): Promise<GuestProcess> {
  const child = spawn(
    process.execPath,
    ['--experimental-transform-types', '--no-warnings', '--import', resolveHook, entry, host],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  await Promise.race([
    once(lines, 'line'),
    exited.then(() => {
      throw new Error(`the RDP guest process exited before it listened on ${host}:3389`);
    }),
  ]);
  return {
    pid: child.pid,
    async stop() {
      child.stdin.end();
      await exited;
    },
  };
}
