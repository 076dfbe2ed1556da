import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { cliEnv, cliFor, cliPath, createNamespace, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli } = cliFor(cluster);
const sessions = 50;
const sideBySide = 5;

interface Session {
  code: number | undefined;
  output: string;
  kill(): void;
}

// `corral-vdi connect … --open <<< "$input"`: the CLI's input is a pipe that ends after the commands
function connectWithInput(args: string[], input: string): Session {
  const child = spawn(process.execPath, [cliPath, ...args], { env: cliEnv() });
  const session: Session = { code: undefined, output: '', kill: () => child.kill('SIGKILL') };
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (chunk: Buffer) => {
      session.output += chunk.toString('utf8');
    });
  child.on('close', (code) => {
    session.code = code ?? 1;
  });
  child.stdin.end(input);
  return session;
}

describe('connect --kind ct --open with input from a here-document', () => {
  it(`runs the input to its end and exits with the shell's code, ${sessions} sessions, ${sideBySide} at a time`, async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-input');
    const kube = new KubeCluster(cluster().kubeConfig);
    // bash reads a terminal through readline, which switched modes under a Ctrl-D sent as the end of input
    const apply = ['ct-pool', 'apply', 'devbox', '--image', 'ghcr.io/acme/devbox:1.4', '--size', '1'];
    expect((await cli([...apply, '--shell', '/bin/bash', '-n', namespace])).code).toBe(0);
    expect((await cli(['ct-pool', 'reconcile', 'devbox', '-n', namespace])).code).toBe(0);
    await waitFor(() => kube.resource(podKind).in(namespace).get('devbox-1'), {
      describe: 'devbox-1 to be Ready',
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    expect((await cli(['assign', 'devbox', 'alice', '-n', namespace, '--kind', 'ct'])).code).toBe(0);
    const connect = ['connect', 'devbox-1', '--kind', 'ct', '--open', '-n', namespace];

    const runSession = async (index: number) => {
      // every third input ends with an exit of its own; the others end where the shell's input ends
      const code = index % 3 === 0 ? index % 7 : 0;
      const input = `echo "run ${index} on $HOSTNAME"\n${code === 0 ? '' : `exit ${code}\n`}`;
      const session = connectWithInput([...connect, '--kubeconfig', cluster().kubeconfigPath], input);
      const exited = await waitFor(() => session.code !== undefined, {
        describe: `session ${index} to exit once its input ended`,
        timeoutMs: 20_000,
      }).then(
        () => true,
        () => false,
      );
      session.kill();
      expect({ exited, code: session.code, output: session.output }, `session ${index}`).toEqual({
        exited: true,
        code,
        output: expect.stringContaining(`run ${index} on devbox-1`),
      });
    };
    // each session is a shell of its own in the one Pod: a few at a time race the same way, in less time
    for (let first = 0; first < sessions; first += sideBySide) {
      const batch = Array.from(
        { length: Math.min(sideBySide, sessions - first) },
        (_, offset) => first + offset,
      );
      await Promise.all(batch.map(runSession));
    }
  }, 300_000);
});
