import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, expect } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { VirtualMachine, VmDevices } from '../../../src/kubevirt-types.js';
import type { LocalClusterAccess } from '../../../src/testing/local-cluster.js';
import { createTestNamespace, useSharedCluster, waitForRunningVmi } from '../../support/cluster.js';

/** The built bin, as npm links it: the tests run what users run. */
export const cliPath = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));

/** What one run of the CLI did. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

// The CLI reads these; a developer's own settings must not leak into the tests.
const scrubbed = [
  'KUBECONFIG',
  'CORRAL_NAMESPACE',
  'CORRAL_VDI_BROKER_URL',
  'NO_COLOR',
  'FORCE_COLOR',
  'USER',
];

/** The environment of a CLI run: the test's, without the CLI's own variables, plus `extra`. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of scrubbed) delete env[name];
  return { ...env, USER: 'admin-tester', ...extra };
}

function requireBuiltCli(): void {
  if (!existsSync(cliPath)) {
    throw new Error(`${cliPath} is missing: build the package first (npx tsup), as scripts/test.sh does.`);
  }
}

/** Runs `corral-vdi <args>` as a child process and resolves with its exit code and output, whatever the code. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = cliEnv()): Promise<CliRun> {
  requireBuiltCli();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliPath, ...args],
      { env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Runs `corral-vdi <args>` on a pseudo-terminal (util-linux `script`), as a person at a terminal runs it; the
 * terminal's output (stdout and stderr together) comes back as `stdout`.
 */
export function runCliOnTerminal(
  args: readonly string[],
  env: NodeJS.ProcessEnv = cliEnv(),
): Promise<CliRun> {
  requireBuiltCli();
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, cliPath, ...args].map(quote).join(' ');
  return new Promise((resolve) => {
    execFile('script', ['-qec', command, '/dev/null'], { env }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `corral-vdi <args>` in the background, for commands that run until stopped. */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv = cliEnv()): ChildProcess {
  requireBuiltCli();
  return spawn(process.execPath, [cliPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Starts `corral-vdi broker serve` for one namespace on a free loopback port, trusting `X-Forwarded-User`, with
 * `CORRAL_VDI_BROKER=1` and `env`; resolves with the process once it listens, and its URL.
 */
export async function startTrustedHeaderBroker(
  kubeconfigPath: string,
  namespace: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string }> {
  const child = startCli(
    ['broker', 'serve', '--listen', '127.0.0.1:0', '--trust-header', 'X-Forwarded-User', '-n', namespace],
    cliEnv({ CORRAL_VDI_BROKER: '1', KUBECONFIG: kubeconfigPath, ...env }),
  );
  const listening = /broker listening on (http:\/\/\S+)/;
  const started = await collectOutput(child)
    .waitFor(listening)
    .catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    });
  return { child, url: listening.exec(started)?.[1] ?? '' };
}

/** Everything a background process printed so far (stdout and stderr), and a wait for what it prints next. */
export interface OutputLog {
  text(): string;
  /**
   * Resolves with the output once `pattern` matches all of it so far; rejects if the process exits first, or after
   * `timeoutMs` (60 s), naming the pattern, so a line that never comes fails its own step, not the whole test.
   */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

/** Collects a background process's output from its start, so nothing printed early is missed. */
export function collectOutput(child: ChildProcess): OutputLog {
  let seen = '';
  const waiting = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    seen += chunk.toString('utf8');
    for (const check of waiting) check();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return {
    text: () => seen,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          if (waiting.delete(check))
            reject(new Error(`printed nothing matching ${pattern} in ${timeoutMs} ms:\n${seen}`));
        }, timeoutMs);
        const check = () => {
          if (!pattern.test(seen)) return;
          waiting.delete(check);
          clearTimeout(timer);
          resolve(seen);
        };
        waiting.add(check);
        child.once('exit', (code) => {
          if (!waiting.delete(check)) return;
          clearTimeout(timer);
          reject(new Error(`exited with ${code} before printing ${pattern}:\n${seen}`));
        });
        check();
      }),
  };
}

/** The shared control plane, for a file that runs the built CLI against it. */
export function useCliCluster(): () => LocalClusterAccess {
  beforeAll(requireBuiltCli);
  return useSharedCluster();
}

/**
 * `corral-vdi <args> --kubeconfig <the cluster>` and the pool steps the CLI tests share: a namespace with the
 * golden VM `golden-desktop` and the pool `devpool` of `size` members, and an assigned member.
 */
export function cliFor(cluster: () => LocalClusterAccess) {
  const cli = (args: string[], env = cliEnv()) =>
    runCli([...args, '--kubeconfig', cluster().kubeconfigPath], env);
  const poolOf = async (prefix: string, size: number): Promise<string> => {
    const namespace = await createTestNamespace(cluster(), prefix);
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await cli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      String(size),
      '-n',
      namespace,
    ]);
    expect(created.code, created.stderr).toBe(0);
    return namespace;
  };
  const assignedMember = async (namespace: string, user: string): Promise<string> => {
    const run = await cli(['assign', 'devpool', user, '-n', namespace, '-o', 'json']);
    expect(run.code, run.stderr).toBe(0);
    return jsonOf<{ desktop: { member: string } }>(run).desktop.member;
  };
  return { cli, poolOf, assignedMember };
}

/** A fresh namespace for one test. */
export const createNamespace = createTestNamespace;

/** Creates a stopped golden VM with a network interface (so its clones get an address) and `devices`. */
export async function createGoldenVm(
  cluster: LocalClusterAccess,
  namespace: string,
  name: string,
  devices: VmDevices = {},
): Promise<void> {
  const vm: VirtualMachine = {
    metadata: { name },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: {
            memory: { guest: '128Mi' },
            devices: { interfaces: [{ name: 'default', masquerade: {} }], ...devices },
          },
          // KubeVirt's admission refuses an interface without a network of its name
          networks: [{ name: 'default', pod: {} }],
        },
      },
    },
  };
  await new KubeCluster(cluster.kubeConfig).createVm(namespace, vm);
}

/** Parses a run's stdout as JSON, failing with the output when it is not. */
export function jsonOf<T = Record<string, unknown>>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

/** Waits until a member's VMI runs and has an address, and returns the address. */
export async function waitForVmiAddress(
  cluster: LocalClusterAccess,
  namespace: string,
  member: string,
): Promise<string> {
  const kube = new KubeCluster(cluster.kubeConfig);
  const vmi = await waitForRunningVmi(kube, namespace, member);
  return vmi?.status?.interfaces?.[0]?.ipAddress ?? '';
}
