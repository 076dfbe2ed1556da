import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, inject } from 'vitest';
import { isVdiError, type VdiError } from '../../src/errors.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/kubevirt-types.js';
import {
  connectLocalCluster,
  type LocalCluster,
  type LocalClusterAccess,
  type StartLocalClusterOptions,
  startLocalCluster,
} from '../../src/testing/local-cluster.js';
import { waitFor } from '../../src/testing/wait-for.js';
import type { SharedClusterAnswer } from './global-setup.js';

let shared: Promise<LocalClusterAccess> | undefined;

async function connectSharedCluster(): Promise<LocalClusterAccess> {
  const response = await fetch(inject('sharedClusterUrl'));
  const answer = (await response.json()) as SharedClusterAnswer;
  if ('error' in answer) throw new Error(`the shared control plane did not start: ${answer.error}`);
  return connectLocalCluster(answer.connection);
}

/**
 * The control plane the whole test run shares (started by the global set-up, simulator included). Each test
 * works in its own namespace from {@link createTestNamespace}; see docs/testing.md for what else it may touch.
 */
export function useSharedCluster(): () => LocalClusterAccess {
  let cluster: LocalClusterAccess | undefined;
  beforeAll(async () => {
    shared ??= connectSharedCluster();
    cluster = await shared;
  });
  afterAll(async () => {
    if (cluster) await stopWorkloadsOf(cluster, takeNamespacesMade());
  });
  return () => {
    if (!cluster) throw new Error('the shared cluster is not connected yet');
    return cluster;
  };
}

/**
 * Starts a control plane of the test file's own and stops it afterwards, for tests that read or replace what is
 * cluster-wide (every node, the whole KubeVirt CR); everything else uses {@link useSharedCluster}.
 */
export function usePrivateCluster(options: StartLocalClusterOptions = {}): () => LocalCluster {
  let cluster: LocalCluster | undefined;
  beforeAll(async () => {
    cluster = await startLocalCluster(options);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('the private cluster is not started');
    return cluster;
  };
}

// Namespaces made since the last file ended: files of a worker run one after another in one module graph.
const namespacesMade = new Set<string>();

function takeNamespacesMade(): string[] {
  const made = [...namespacesMade];
  namespacesMade.clear();
  return made;
}

/**
 * Deletes the VMs and Pods of a file's namespaces once it ends, without waiting for them to go: the plane has no
 * namespace controller to empty a deleted namespace, and each running guest left behind costs KubeVirt's
 * controllers and the node stand-in work for the rest of the run.
 */
async function stopWorkloadsOf(cluster: LocalClusterAccess, namespaces: readonly string[]): Promise<void> {
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  await Promise.all(
    namespaces.flatMap((namespace) => [
      custom.deleteCollectionNamespacedCustomObject({
        group: 'kubevirt.io',
        version: 'v1',
        namespace,
        plural: 'virtualmachines',
      }),
      core.deleteCollectionNamespacedPod({ namespace }),
    ]),
  );
}

let namespaceCounter = 0;
// Files share the cluster and a worker may run several files: the suffix keeps names apart across both.
const namespaceSuffix = randomBytes(3).toString('hex');

/** Creates a fresh namespace for one test and returns its name. */
export async function createTestNamespace(cluster: LocalClusterAccess, prefix = 'test'): Promise<string> {
  namespaceCounter += 1;
  const name = `${prefix}-${namespaceSuffix}-${namespaceCounter}`;
  await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  namespacesMade.add(name);
  return name;
}

/** A minimal stopped VM, as a golden VM or a pool member: KubeVirt refuses to run one without memory. */
export function stoppedVm(name: string, labels: Record<string, string> = {}): VirtualMachine {
  return {
    metadata: { name, labels },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { devices: {}, memory: { guest: '128Mi' } } } },
    },
  };
}

/**
 * Creates `size` pool members `<pool>-1 … <pool>-N` directly, as a pool create would leave them, and waits for the
 * simulator to show each one Stopped: until then its power is unknown, which a keeper or a claim rightly leaves be.
 */
export async function createPoolMembers(
  cluster: LocalClusterAccess,
  namespace: string,
  pool: string,
  size: number,
): Promise<string[]> {
  const kube = new KubeCluster(cluster.kubeConfig);
  const names = Array.from({ length: size }, (_, index) => `${pool}-${index + 1}`);
  await Promise.all(
    names.map((name) => kube.createVm(namespace, stoppedVm(name, { 'corral.dev/vdi-pool': pool }))),
  );
  // one list a look, and longer for a large pool: KubeVirt's controller writes each VM's status in turn
  await waitFor(() => kube.listVms(namespace, `corral.dev/vdi-pool=${pool}`), {
    describe: `the ${size} VMs of ${pool} to show Stopped`,
    until: (vms) => vms.length === size && vms.every((vm) => vm.status?.printableStatus === 'Stopped'),
    timeoutMs: 30_000 + size * 100,
  });
  return names;
}

/**
 * Waits for the member's VMI to run with an address, and for its VM to show Running: KubeVirt shows the VM's own
 * status a moment after its instance's, and connect and the consoles read both.
 */
export async function waitForRunningVmi(
  kube: KubeCluster,
  namespace: string,
  member: string,
): Promise<VirtualMachineInstance> {
  const vmi = await waitFor(() => kube.getVmi(namespace, member), {
    describe: `the VMI of ${member} to run with an address`,
    until: (found) => found?.status?.phase === 'Running' && !!found.status.interfaces?.[0]?.ipAddress,
  });
  await waitFor(() => kube.getVm(namespace, member), {
    describe: `VM ${member} to show Running`,
    until: (found) => found?.status?.printableStatus === 'Running',
  });
  return vmi as VirtualMachineInstance;
}

/** The `VdiError` a call rejects with; fails when it resolves or rejects with anything else. */
export async function caught(promise: Promise<unknown>): Promise<VdiError> {
  try {
    await promise;
  } catch (error) {
    if (isVdiError(error)) return error;
    throw error;
  }
  throw new Error('expected a VdiError');
}
