import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachine } from '../../src/kubevirt-types.js';
import {
  type LocalCluster,
  type StartLocalClusterOptions,
  startLocalCluster,
} from '../../src/testing/local-cluster.js';

/** Starts one local control plane for the test file and stops it afterwards. */
export function useLocalCluster(options: StartLocalClusterOptions = {}): () => LocalCluster {
  let cluster: LocalCluster | undefined;
  beforeAll(async () => {
    cluster = await startLocalCluster(options);
    console.info(`local control plane started in ${cluster.startupMs} ms`);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('the local cluster is not started');
    return cluster;
  };
}

let namespaceCounter = 0;

/** Creates a fresh namespace for one test and returns its name. */
export async function createTestNamespace(cluster: LocalCluster, prefix = 'test'): Promise<string> {
  namespaceCounter += 1;
  const name = `${prefix}-${process.pid}-${namespaceCounter}`;
  await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** A minimal stopped VM, as a golden VM or a pool member. */
export function stoppedVm(name: string, labels: Record<string, string> = {}): VirtualMachine {
  return {
    metadata: { name, labels },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { devices: {} } } },
    },
  };
}

/** Creates `size` pool members `<pool>-1 … <pool>-N` directly, as a pool create would leave them. */
export async function createPoolMembers(
  cluster: LocalCluster,
  namespace: string,
  pool: string,
  size: number,
): Promise<string[]> {
  const kube = new KubeCluster(cluster.kubeConfig);
  const names = Array.from({ length: size }, (_, index) => `${pool}-${index + 1}`);
  await Promise.all(
    names.map((name) => kube.createVm(namespace, stoppedVm(name, { 'corral.dev/vdi-pool': pool }))),
  );
  return names;
}
