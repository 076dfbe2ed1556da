import { PassThrough } from 'node:stream';
import { CoreV1Api, Exec, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node';
import { waitFor } from '../../../src/testing/wait-for.js';

/** A Pod with one container `main`, as a test writes it. */
/** The node of the shared plane's node agent and simulator, which no test deletes. */
export const sharedNode = 'sim-node-1';

export function samplePod(
  name: string,
  container: Partial<
    V1Pod['spec'] extends infer S ? (S extends { containers: Array<infer C> } ? C : never) : never
  > = {},
  extra: { annotations?: Record<string, string>; spec?: Partial<NonNullable<V1Pod['spec']>> } = {},
): V1Pod {
  return {
    metadata: { name, annotations: extra.annotations },
    spec: {
      containers: [
        { name: 'main', image: 'example.com/desktop:1', command: ['sleep', '3600'], ...container },
      ],
      ...extra.spec,
    },
  };
}

/** Creates a Pod and waits until it is Ready. */
export async function createReadyPod(kubeConfig: KubeConfig, namespace: string, pod: V1Pod): Promise<V1Pod> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedPod({ namespace, body: pod });
  return await waitFor(() => core.readNamespacedPod({ namespace, name: pod.metadata?.name ?? '' }), {
    describe: `pod ${pod.metadata?.name} to be Ready`,
    until: (found) =>
      found.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
}

/** What an exec through the apiserver returned. */
export interface ExecResult {
  stdout: string;
  stderr: string;
  status: V1Status | undefined;
  /** The websocket's close code: 1000 after a status, 1006 when the connection was cut. */
  closeCode: number;
}

/** Runs `command` in a Pod through the apiserver's `pods/exec` with client-node, feeding `input` to its stdin. */
export async function execInPod(
  kubeConfig: KubeConfig,
  namespace: string,
  pod: string,
  command: string[],
  options: { input?: string[]; tty?: boolean; container?: string } = {},
): Promise<ExecResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { stdout: '', stderr: '' };
  stdout.on('data', (chunk: Buffer) => {
    chunks.stdout += chunk.toString('utf8');
  });
  stderr.on('data', (chunk: Buffer) => {
    chunks.stderr += chunk.toString('utf8');
  });
  const stdin = options.input ? new PassThrough() : null;
  let status: V1Status | undefined;
  const socket = await new Exec(kubeConfig).exec(
    namespace,
    pod,
    options.container ?? 'main',
    command,
    stdout,
    options.tty ? null : stderr,
    stdin,
    options.tty ?? false,
    (received) => {
      status = received;
    },
  );
  for (const line of options.input ?? []) stdin?.write(line);
  const closeCode = await new Promise<number>((resolve) =>
    socket.on('close', (code: number) => resolve(code)),
  );
  return { ...chunks, status, closeCode };
}
