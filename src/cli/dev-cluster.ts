import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { VdiError } from '../errors.js';
import { startLocalCluster } from '../testing/local-cluster.js';

/** What `dev-cluster up` leaves for `status` and `down`. */
interface DevClusterState {
  pid: number;
  server: string;
  kubeconfig: string;
  /** The control plane's data folder, removed once it has stopped. */
  dataDir: string;
  startedAt: string;
}

function stateDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'corral-vdi', 'dev-cluster');
}

const statePath = () => join(stateDir(), 'state.json');
const logPath = () => join(stateDir(), 'dev-cluster.log');

function readState(): DevClusterState | undefined {
  if (!existsSync(statePath())) return undefined;
  const state = JSON.parse(readFileSync(statePath(), 'utf8')) as DevClusterState;
  try {
    process.kill(state.pid, 0);
    return state;
  } catch {
    rmSync(statePath(), { force: true });
    return undefined;
  }
}

/** Runs the control plane in this process until SIGTERM or SIGINT; `up` starts it in the background. */
export async function serveDevCluster(kubeconfigPath: string): Promise<void> {
  const cluster = await startLocalCluster({ log: (line) => process.stderr.write(`${line}\n`) });
  mkdirSync(dirname(kubeconfigPath), { recursive: true });
  copyFileSync(cluster.kubeconfigPath, kubeconfigPath);
  const state: DevClusterState = {
    pid: process.pid,
    server: cluster.server,
    kubeconfig: kubeconfigPath,
    dataDir: cluster.connection.dataDir,
    startedAt: new Date().toISOString(),
  };
  writeFileSync(statePath(), JSON.stringify(state));
  const shutdown = async () => {
    rmSync(statePath(), { force: true });
    await cluster.stop();
    process.exit(0);
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

/**
 * Starts the local control plane in the background and returns once it serves; reuses a running one.
 * `cliEntry` is the CLI's main script: the background process runs `dev-cluster serve` through it.
 */
export async function devClusterUp(
  kubeconfig: string | undefined,
  cliEntry: string,
): Promise<DevClusterState & { reused: boolean }> {
  const running = readState();
  if (running) return { ...running, reused: true };
  mkdirSync(stateDir(), { recursive: true });
  const target = resolve(kubeconfig ?? join(stateDir(), 'kubeconfig'));
  const log = openSync(logPath(), 'w');
  const child = spawn(process.execPath, [cliEntry, 'dev-cluster', 'serve', '--kubeconfig', target], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  // A first run may build the binaries, which takes minutes.
  const deadline = Date.now() + 20 * 60_000;
  while (Date.now() < deadline) {
    const state = readState();
    if (state) return { ...state, reused: false };
    if (child.exitCode !== null) break;
    await new Promise((done) => setTimeout(done, 250));
  }
  const tail = existsSync(logPath())
    ? readFileSync(logPath(), 'utf8').trim().split('\n').slice(-15).join('\n')
    : '';
  throw new VdiError(
    'CONTROL_PLANE_FAILED',
    `The local control plane did not start. Its log (${logPath()}) ends:\n${tail}`,
  );
}

/** Stops the background control plane; `false` when none ran. */
export async function devClusterDown(): Promise<boolean> {
  const state = readState();
  if (!state) return false;
  process.kill(state.pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      process.kill(state.pid, 0);
    } catch {
      return true;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  process.kill(state.pid, 'SIGKILL');
  rmSync(statePath(), { force: true });
  return true;
}

/** The running control plane, if any. */
export function devClusterStatus(): DevClusterState | undefined {
  return readState();
}
