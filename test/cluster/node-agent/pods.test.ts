import { type RequestOptions, request } from 'node:https';
import { PassThrough } from 'node:stream';
import { Attach, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { createReadyPod, execInPod, samplePod } from './node-agent-support.js';

const cluster = useSharedCluster();

function core() {
  return cluster().kubeConfig.makeApiClient(CoreV1Api);
}

async function readPod(namespace: string, name: string) {
  return await core().readNamespacedPod({ namespace, name });
}

/** Follows a container's log through the apiserver until `stop`. */
function followLog(namespace: string, name: string) {
  const { kubeConfig, server } = cluster();
  let text = '';
  const options: RequestOptions = {};
  const call = kubeConfig.applyToHTTPSOptions(options).then(() => {
    const url = `${server}/api/v1/namespaces/${namespace}/pods/${name}/log?follow=true`;
    const pending = request(url, options, (response) => {
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      response.on('error', () => {});
    });
    pending.on('error', () => {});
    pending.end();
    return pending;
  });
  return { text: () => text, stop: () => void call.then((pending) => pending.destroy()) };
}

/** A writable that client-node takes for a terminal, so it sends the size on the resize channel. */
function terminalOutput(columns: number, rows: number) {
  return Object.assign(new PassThrough(), { columns, rows });
}

describe('the node agent', () => {
  it('registers its node with the address and port the apiserver reaches its kubelet endpoints on', async () => {
    const node = await core().readNode({ name: 'sim-node-1' });
    expect(node.status?.addresses).toEqual([{ type: 'InternalIP', address: '127.0.0.1' }]);
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBeGreaterThan(0);
    expect(node.status?.allocatable).toMatchObject({ cpu: '8', pods: '110' });
    expect(node.status?.conditions?.find((condition) => condition.type === 'Ready')?.status).toBe('True');
  });

  it('binds and runs a Pod, reports its status, and reads its name back through exec in the apiserver', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    const pod = await createReadyPod(
      kubeConfig,
      namespace,
      samplePod('echo-1', {
        env: [
          { name: 'GREETING', value: 'hello' },
          { name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        ],
      }),
    );
    // other files on the shared plane add GPU nodes, which fit this Pod too: any node the agent serves will do
    const node = await core().readNode({ name: pod.spec?.nodeName ?? '' });
    expect(node.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBeGreaterThan(0);
    expect(pod.status).toMatchObject({ phase: 'Running', hostIP: '127.0.0.1' });
    // a /16 of its own from 127.10 up, never 127.0.0.1
    expect(pod.status?.podIP).toMatch(/^127\.(1\d|[2-9]\d|1\d\d|2[0-5]\d)\.\d+\.\d+$/);
    expect(Object.fromEntries((pod.status?.conditions ?? []).map((c) => [c.type, c.status]))).toEqual({
      PodScheduled: 'True',
      Initialized: 'True',
      ContainersReady: 'True',
      Ready: 'True',
    });
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({
      name: 'main',
      ready: true,
      started: true,
      restartCount: 0,
      image: 'example.com/desktop:1',
    });
    expect(pod.status?.containerStatuses?.[0]?.state?.running?.startedAt).toBeDefined();

    const result = await execInPod(kubeConfig, namespace, 'echo-1', [
      'sh',
      '-c',
      'echo $HOSTNAME $GREETING $MY_NAMESPACE; pwd',
    ]);
    expect(result.stdout.split('\n')[0]).toBe(`echo-1 hello ${namespace}`);
    expect(result.stdout).toContain(`${namespace}_echo-1_${pod.metadata?.uid}`);
    expect(result.status?.status).toBe('Success');
  });

  it('separates stdout from stderr and reports a non-zero exit code as the kubelet does', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    await createReadyPod(kubeConfig, namespace, samplePod('exit-1'));
    const result = await execInPod(kubeConfig, namespace, 'exit-1', [
      'sh',
      '-c',
      'echo out; echo err >&2; exit 7',
    ]);
    expect(result).toMatchObject({ stdout: 'out\n', stderr: 'err\n', closeCode: 1000 });
    expect(result.status).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });

    const missing = await execInPod(kubeConfig, namespace, 'exit-1', ['no-such-command-here']);
    expect(missing.status).toMatchObject({ status: 'Failure', reason: 'InternalError' });
    expect(missing.status?.message).toContain('no-such-command-here');
  });

  it('runs an interactive shell under a terminal: input, output, resize, and exit code 3 on the status channel', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    await createReadyPod(kubeConfig, namespace, samplePod('tty-1'));
    const stdin = new PassThrough();
    const stdout = terminalOutput(132, 43);
    let output = '';
    stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    let status: { status?: string; reason?: string; details?: unknown } | undefined;
    const { Exec } = await import('@kubernetes/client-node');
    const socket = await new Exec(kubeConfig).exec(
      namespace,
      'tty-1',
      'main',
      ['sh'],
      stdout,
      null,
      stdin,
      true,
      (s) => {
        status = s;
      },
    );
    const closed = new Promise<number>((resolve) => socket.on('close', (code: number) => resolve(code)));
    stdin.write('echo "tty says $HOSTNAME"; tty -s && echo is-a-tty\n');
    await waitFor(() => output.includes('tty says tty-1') && output.includes('is-a-tty'), {
      describe: 'the shell to answer through the terminal',
    });
    // The size arrives beside the input; ask until the shell sees it.
    let asked = 0;
    await waitFor(
      () => {
        if (asked < output.split('stty size').length) {
          asked += 1;
          stdin.write('stty size\n');
        }
        return output.includes('43 132');
      },
      { describe: 'the terminal to take the size sent on the resize channel' },
    );
    stdin.write('exit 3\n');
    expect(await closed).toBe(1000);
    expect(status).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('attaches to the main process of a container with stdin', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    await createReadyPod(kubeConfig, namespace, samplePod('attach-1', { command: [], stdin: true }));
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let output = '';
    stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const socket = await new Attach(kubeConfig).attach(
      namespace,
      'attach-1',
      'main',
      stdout,
      null,
      stdin,
      false,
    );
    stdin.write('echo "attached to $HOSTNAME"\n');
    await waitFor(() => output.includes('attached to attach-1'), {
      describe: 'the attached shell to answer',
    });
    socket.close();
    const logs = await core().readNamespacedPodLog({ namespace, name: 'attach-1', container: 'main' });
    expect(logs).toBe('attached to attach-1\n');
  });

  it('serves the container log, its tail, and follows new lines until asked to stop', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    const script = 'echo one; echo two; while [ ! -f go ]; do sleep 0.05; done; echo after-go; sleep 3600';
    await createReadyPod(kubeConfig, namespace, samplePod('logs-1', { command: ['sh', '-c', script] }));
    const read = (options: { tailLines?: number; timestamps?: boolean } = {}) =>
      core().readNamespacedPodLog({ namespace, name: 'logs-1', container: 'main', ...options });
    await waitFor(read, { describe: 'the first two lines', until: (text) => text === 'one\ntwo\n' });
    expect(await read({ tailLines: 1 })).toBe('two\n');
    expect(await read({ timestamps: true })).toMatch(/^\d{4}-\d\d-\d\dT\S+Z one\n\S+ two\n$/);

    const followed = followLog(namespace, 'logs-1');
    await waitFor(() => followed.text().includes('two\n'), { describe: 'the followed log to start' });
    await execInPod(kubeConfig, namespace, 'logs-1', ['touch', 'go']);
    await waitFor(() => followed.text().includes('after-go\n'), {
      describe: 'a line written after the follow began',
    });
    followed.stop();
  });

  it('restarts a container that exits, counting restarts and keeping the previous log', async () => {
    const namespace = await createTestNamespace(cluster(), 'pods');
    await core().createNamespacedPod({
      namespace,
      body: samplePod('crash-1', { command: ['sh', '-c', 'echo "run at $HOSTNAME"; exit 1'] }),
    });
    const pod = await waitFor(() => readPod(namespace, 'crash-1'), {
      describe: 'the container to be restarted',
      until: (found) => (found.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
    });
    expect(pod.status?.phase).toBe('Running');
    expect(pod.status?.containerStatuses?.[0]?.lastState?.terminated).toMatchObject({
      exitCode: 1,
      reason: 'Error',
    });
    const previous = await core().readNamespacedPodLog({ namespace, name: 'crash-1', previous: true });
    expect(previous).toBe('run at crash-1\n');
  });

  it('ends a Pod whose restart policy is Never as Succeeded or Failed by its exit code', async () => {
    const namespace = await createTestNamespace(cluster(), 'pods');
    for (const [name, code] of [
      ['done-0', 0],
      ['done-4', 4],
    ] as const) {
      await core().createNamespacedPod({
        namespace,
        body: samplePod(
          name,
          { command: ['sh', '-c', `exit ${code}`] },
          { spec: { restartPolicy: 'Never' } },
        ),
      });
    }
    const succeeded = await waitFor(() => readPod(namespace, 'done-0'), {
      describe: 'done-0 to succeed',
      until: (found) => found.status?.phase === 'Succeeded',
    });
    expect(succeeded.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    const failed = await waitFor(() => readPod(namespace, 'done-4'), {
      describe: 'done-4 to fail',
      until: (found) => found.status?.phase === 'Failed',
    });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 4,
      reason: 'Error',
    });
    expect(failed.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PodCompleted',
    });
  });

  it('ends the processes of a Pod deleted with grace and then removes the Pod', async () => {
    const { kubeConfig } = cluster();
    const namespace = await createTestNamespace(cluster(), 'pods');
    await createReadyPod(
      kubeConfig,
      namespace,
      samplePod('gone-1', { command: ['sh', '-c', 'echo $$ > pid; exec sleep 3600'] }),
    );
    const { stdout } = await execInPod(kubeConfig, namespace, 'gone-1', ['cat', 'pid']);
    const pid = Number(stdout.trim());
    expect(pid).toBeGreaterThan(1);
    expect(() => process.kill(pid, 0)).not.toThrow();

    await core().deleteNamespacedPod({ namespace, name: 'gone-1' });
    await waitFor(
      () =>
        readPod(namespace, 'gone-1').then(
          () => false,
          (error: { code?: number }) => error.code === 404,
        ),
      { describe: 'the Pod to be removed once its container ended' },
    );
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('serves the kubelet endpoints to the apiserver only, not to a user with a certificate of the same CA', async () => {
    const node = await core().readNode({ name: 'sim-node-1' });
    const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    const user = cluster().userKubeConfig('mallory', ['system:masters']).getCurrentUser();
    const status = await new Promise<number>((resolve, reject) => {
      const call = request(
        {
          host: '127.0.0.1',
          port,
          path: '/healthz',
          ca: cluster().certificates.caPem,
          cert: Buffer.from(user?.certData ?? '', 'base64'),
          key: Buffer.from(user?.keyData ?? '', 'base64'),
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      call.on('error', reject);
      call.end();
    });
    expect(status).toBe(401);
  });
});
