import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  connectLocalCluster,
  type LocalClusterAccess,
  type LocalClusterConnection,
} from '../../src/testing/local-cluster.js';

const entry = fileURLToPath(new URL('./control-plane-process.ts', import.meta.url));
// the test kit's sources use TypeScript that plain type stripping cannot run, such as parameter properties
const resolveHook = fileURLToPath(new URL('../../test/faults/support/resolve-ts.ts', import.meta.url));

/** A local control plane running in a child process, and how to stop it. */
export interface ControlPlaneProcess {
  access: LocalClusterAccess;
  stop(): Promise<void>;
}

/**
 * Starts the local control plane (KubeVirt's own controllers, the handler stand-in and the node agent included) in a
 * process of its own, so the stand-ins' work does not share the measured client's event loop and CPU time.
 */
export async function startControlPlaneProcess(): Promise<ControlPlaneProcess> {
  const child = spawn(process.execPath, ['--experimental-transform-types', '--import', resolveHook, entry], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout });
  const [line] = (await Promise.race([
    once(lines, 'line'),
    exited.then(() => {
      throw new Error('the control plane process exited before it started the control plane');
    }),
  ])) as [string];
  const connection = JSON.parse(line) as LocalClusterConnection;
  return {
    access: connectLocalCluster(connection),
    async stop() {
      child.stdin.end();
      await exited;
    },
  };
}
