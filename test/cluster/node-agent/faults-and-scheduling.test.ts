import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createNamespaceClock } from '../../../src/testing/kubevirt/namespace-clock.js';
import { createSimulatedNode } from '../../../src/testing/kubevirt/nodes.js';
import { nodeAgentAnnotations } from '../../../src/testing/node-agent/pod-knobs.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { createReadyPod, execInPod, samplePod, sharedNode } from './node-agent-support.js';

const cluster = useSharedCluster();

function core() {
  return cluster().kubeConfig.makeApiClient(CoreV1Api);
}

function readPod(namespace: string, name: string) {
  return core().readNamespacedPod({ namespace, name });
}

describe("the node agent's fault knobs", () => {
  it('fails a Pod that cannot start: Failed under restart policy Never, CrashLoopBackOff under Always', async () => {
    const namespace = await createTestNamespace(cluster(), 'pod-faults');
    const annotations = { [nodeAgentAnnotations.failStart]: 'image pull went wrong' };
    await core().createNamespacedPod({
      namespace,
      body: samplePod('never-1', {}, { annotations, spec: { restartPolicy: 'Never' } }),
    });
    await core().createNamespacedPod({ namespace, body: samplePod('always-1', {}, { annotations }) });

    const failed = await waitFor(() => readPod(namespace, 'never-1'), {
      describe: 'never-1 to fail',
      until: (pod) => pod.status?.phase === 'Failed',
    });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
      exitCode: 128,
      reason: 'StartError',
      message: 'image pull went wrong',
    });
    const looping = await waitFor(() => readPod(namespace, 'always-1'), {
      describe: 'always-1 to back off after a failed restart',
      until: (pod) =>
        pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' &&
        (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
    });
    expect(looping.status?.containerStatuses?.[0]).toMatchObject({ ready: false, started: false });
    expect(looping.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');

    const refused = await execInPod(cluster().kubeConfig, namespace, 'always-1', ['true']).catch(
      (error: unknown) => error,
    );
    // The agent refuses an exec into a container that does not run; the apiserver passes the 400 on.
    expect(refused).toMatchObject({ message: expect.stringContaining('400') });
  });

  it('starts a Pod only once its start delay has passed on the namespace clock', async () => {
    const namespace = await createTestNamespace(cluster(), 'pod-faults');
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace);
    // on the plane's own node: the test is about the delay, and in a loaded run a Pod the agent bound to a GPU node
    // another test had made never ran
    const delayed = (name: string, ms: number) =>
      samplePod(
        name,
        {},
        { annotations: { [nodeAgentAnnotations.startDelayMs]: String(ms) }, spec: { nodeName: sharedNode } },
      );
    await core().createNamespacedPod({ namespace, body: delayed('slow-1', 60_000) });
    // A Pod due a second earlier shows when the agent has acted on the moved clock.
    await core().createNamespacedPod({ namespace, body: delayed('witness-1', 59_000) });
    // both delays count from the agent's first look at the Pod: the clock moves only once it has looked at each
    for (const name of ['slow-1', 'witness-1']) {
      const creating = await waitFor(() => readPod(namespace, name), {
        describe: `${name} to be bound and creating its container`,
        until: (pod) => pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating',
      });
      expect(creating.status?.phase).toBe('Pending');
    }
    await clock.advance(59_000);
    await waitFor(() => readPod(namespace, 'witness-1'), {
      describe: 'witness-1 to run once its delay passed',
      until: (pod) => pod.status?.phase === 'Running',
    });
    expect((await readPod(namespace, 'slow-1')).status?.phase).toBe('Pending');
    await clock.advance(1_000);
    await waitFor(() => readPod(namespace, 'slow-1'), {
      describe: 'slow-1 to run once its delay passed',
      until: (pod) => pod.status?.phase === 'Running',
    });
  });

  it('cuts an exec stream after the number of bytes its Pod says, without a status', async () => {
    const namespace = await createTestNamespace(cluster(), 'pod-faults');
    const annotations = { [nodeAgentAnnotations.dropStreamAfterBytes]: '5' };
    await createReadyPod(cluster().kubeConfig, namespace, samplePod('drop-1', {}, { annotations }));
    const result = await execInPod(cluster().kubeConfig, namespace, 'drop-1', [
      'sh',
      '-c',
      'echo 0123456789',
    ]);
    expect(result).toMatchObject({ stdout: '01234', status: undefined });
    expect(result.closeCode).not.toBe(1000);
  });

  it('keeps a never-ready Pod Running but not Ready', async () => {
    const namespace = await createTestNamespace(cluster(), 'pod-faults');
    await core().createNamespacedPod({
      namespace,
      body: samplePod('unready-1', {}, { annotations: { [nodeAgentAnnotations.neverReady]: 'true' } }),
    });
    const pod = await waitFor(() => readPod(namespace, 'unready-1'), {
      describe: 'unready-1 to run',
      until: (found) => found.status?.phase === 'Running',
    });
    expect(pod.status?.containerStatuses?.[0]).toMatchObject({ ready: false, started: true });
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [main]',
    });
  });
});

describe("the node agent's scheduling", () => {
  it('binds Pods by node selector and extended resources, and waits with the reason when nothing fits', async () => {
    const namespace = await createTestNamespace(cluster(), 'pod-sched');
    const gpu = `example.com/${namespace}-gpu`;
    const wantsGpu = (name: string) =>
      samplePod(
        name,
        { resources: { limits: { [gpu]: '1' } } },
        { spec: { nodeSelector: { 'example.com/pool': namespace } } },
      );
    await core().createNamespacedPod({ namespace, body: wantsGpu('gpu-a') });
    const waiting = await waitFor(() => readPod(namespace, 'gpu-a'), {
      describe: 'gpu-a to be unschedulable',
      until: (pod) => pod.status?.conditions?.some((c) => c.reason === 'Unschedulable') === true,
    });
    expect(waiting.spec?.nodeName).toBeUndefined();
    expect(waiting.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message).toMatch(
      /^0\/\d+ nodes are available: .*didn't match node selector/,
    );

    await createSimulatedNode(cluster().kubeConfig, {
      name: `${namespace}-gpu-node`,
      allocatable: { [gpu]: '1' },
      labels: { 'example.com/pool': namespace },
    });
    const running = await createReadyPodAfterBinding(namespace, 'gpu-a');
    expect(running.spec?.nodeName).toBe(`${namespace}-gpu-node`);
    const exec = await execInPod(cluster().kubeConfig, namespace, 'gpu-a', ['sh', '-c', 'echo $HOSTNAME']);
    expect(exec.stdout).toBe('gpu-a\n');

    await core().createNamespacedPod({ namespace, body: wantsGpu('gpu-b') });
    const second = await waitFor(() => readPod(namespace, 'gpu-b'), {
      describe: 'gpu-b to wait for the one device',
      until: (pod) => pod.status?.conditions?.some((c) => c.reason === 'Unschedulable') === true,
    });
    expect(second.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message).toContain(
      `1 Insufficient ${gpu}`,
    );

    await core().deleteNamespacedPod({ namespace, name: 'gpu-a' });
    const moved = await createReadyPodAfterBinding(namespace, 'gpu-b');
    expect(moved.spec?.nodeName).toBe(`${namespace}-gpu-node`);
  });
});

async function createReadyPodAfterBinding(namespace: string, name: string) {
  return await waitFor(() => readPod(namespace, name), {
    describe: `${name} to be bound and Ready`,
    until: (pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
}
