import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../src/testing/wait-for.js';

/** The built CLI, as users run it (`npx tsup` first). */
const cliPath = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

// the CLI reads these; a developer's own settings must not reach the measured processes
const scrubbed = ['KUBECONFIG', 'CORRAL_NAMESPACE', 'CORRAL_VDI_BROKER_URL', 'CORRAL_VDI_LEADER_ELECT'];

/** One running `corral-vdi broker serve --leader-elect` process. */
export interface BrokerProcess {
  child: ChildProcess;
  /** Where its HTTP API listens. */
  url: string;
  /** The name it puts on the leader Lease when it leads. */
  identity: string;
  /** Everything it printed so far. */
  output(): string;
}

/**
 * Starts `broker serve --leader-elect --metrics` on `namespace`, trusting the login header `X-Forwarded-User`,
 * with the election flags `electionArgs` and Node's flags `nodeArgs`; resolves once it has printed its address and
 * its identity.
 */
export async function startBrokerProcess(
  kubeconfigPath: string,
  namespace: string,
  electionArgs: readonly string[] = [],
  nodeArgs: readonly string[] = [],
): Promise<BrokerProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env, CORRAL_VDI_BROKER: '1' };
  for (const name of scrubbed) delete env[name];
  const args = ['serve', '--listen', '127.0.0.1:0', '--trust-header', 'X-Forwarded-User', '-n', namespace];
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      cliPath,
      'broker',
      ...args,
      '--kubeconfig',
      kubeconfigPath,
      '--leader-elect',
      '--metrics',
      ...electionArgs,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  const collect = (chunk: Buffer) => {
    printed += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const started = await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}:\n${printed}`);
      const url = /broker listening on (http:\/\/\S+)/.exec(printed)?.[1];
      const identity = /leader election as (\S+) on Lease/.exec(printed)?.[1];
      return url && identity ? { url, identity } : undefined;
    },
    { describe: `broker serve on ${namespace} to print its address and identity`, timeoutMs: 120_000 },
  );
  return { child, ...started, output: () => printed };
}

/** Kills the processes (`SIGKILL`) and resolves once every one has exited. */
export async function killBrokerProcesses(processes: readonly BrokerProcess[]): Promise<void> {
  await Promise.all(
    processes.map(({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

/** The sum of every sample of the counter `name` (all its labels) on the process's `/metrics`. */
export async function readCounter(broker: BrokerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${broker.url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}
