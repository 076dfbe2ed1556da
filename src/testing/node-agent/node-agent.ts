import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { type Informer, startInformer } from '../kubevirt/informer.js';
import { claimLoopbackRange, IpPool } from '../kubevirt/ip-pool.js';
import { mergePatch, splitKey } from '../kubevirt/kube-calls.js';
import { startNamespaceScopes } from '../kubevirt/namespace-scope.js';
import { createSimulatedNode } from '../kubevirt/nodes.js';
import { KeyedWorkQueue } from '../kubevirt/work-queue.js';
import { startKubeletServer } from './kubelet-server.js';
import { type CachedNode, type CachedPod, createPodController } from './pod-controller.js';

/** Options of {@link startNodeAgent}. @category testing */
export interface NodeAgentOptions {
  /** The node the agent registers (the KubeVirt simulator's default node, so VMIs and Pods share it). Default `sim-node-1`. */
  nodeName?: string;
  /**
   * The CIDR inside 127.0.0.0/8 that Pod IPs come from, one per Pod while it runs. Default: the first /16 from
   * `127.10.0.0/16` up that no KubeVirt simulator or other node agent on this machine holds (see `claimLoopbackRange`).
   */
  podIpRange?: string;
  /**
   * Pods whose containers run a process that only waits (`sleep infinity`) in place of their commands, for images
   * this node cannot run, such as KubeVirt's launcher. Default: none.
   */
  idlePods?: (pod: V1Pod) => boolean;
  /** Receives a line per binding, stream and deletion, every knob it cannot read, and every failed step it retries. */
  log?: (line: string) => void;
}

/** The cluster access the node agent needs: an administrator's configuration and PEM material for its server. @category testing */
export interface NodeAgentCluster {
  kubeConfig: KubeConfig;
  certificates: {
    /** The CA that signed the apiserver's kubelet client certificate. */
    caPem: string;
    /** A serving certificate for `127.0.0.1`, which the apiserver checks against `--kubelet-certificate-authority`. */
    servingCertPem: string;
    servingKeyPem: string;
    /** The certificate kube-apiserver presents to kubelets (`--kubelet-client-certificate`): the only caller served. */
    kubeletClientCertPem: string;
  };
}

/** A running node agent. @category testing */
export interface NodeAgent {
  /** The node the agent registered. */
  nodeName: string;
  /** Where the kubelet endpoints listen, `https://127.0.0.1:<port>`; every node it serves points here. */
  kubeletUrl: string;
  /** Ends every Pod's processes, removes their scratch folders, closes the watches and the server. Leaves the objects as they are. */
  stop(): Promise<void>;
}

const defaultAllocatable = { cpu: '8', memory: '16Gi', pods: '110' };

function servesNode(node: CachedNode, port: number): boolean {
  const addressed = node.status?.addresses?.some(
    (address) => address.type === 'InternalIP' && address.address === '127.0.0.1',
  );
  return addressed === true && node.status?.daemonEndpoints?.kubeletEndpoint?.Port === port;
}

/**
 * Starts the node agent against a real apiserver: a stand-in for the kubelet of every Node and for the scheduler.
 * It registers a Node, points every Node's kubelet endpoint at itself, binds unscheduled Pods to a fitting node,
 * runs each container as a local process (a shell in a per-Pod scratch folder, no image, no isolation), writes
 * the Pods' status, finishes their deletion, and serves `exec`, `attach` and `containerLogs` to the apiserver over
 * TLS. `startLocalCluster` calls it; what it simulates and its fault knobs are in `docs/simulator.md`.
 *
 * @example
 * ```ts
 * const agent = await startNodeAgent(cluster, { nodeName: 'node-a' });
 * try {
 *   // create Pods, wait for them to be Ready, exec into them through the apiserver…
 * } finally {
 *   await agent.stop();
 * }
 * ```
 * @throws `VdiError` `INVALID_INPUT` for a `podIpRange` outside 127.0.0.0/8.
 * @category testing
 */
export async function startNodeAgent(
  cluster: NodeAgentCluster,
  options: NodeAgentOptions = {},
): Promise<NodeAgent> {
  const { kubeConfig, certificates } = cluster;
  const log = options.log ?? (() => {});
  const nodeName = options.nodeName?.trim() || 'sim-node-1';
  const addresses = await claimLoopbackRange(options.podIpRange);
  const ips = new IpPool(addresses.range);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const dataDir = mkdtempSync(join(tmpdir(), 'corral-vdi-pods-'));
  const stoppers: Array<() => void> = [];
  const podQueue = new KeyedWorkQueue(16, log);
  const nodeQueue = new KeyedWorkQueue(4, log);
  let controller: ReturnType<typeof createPodController> | undefined;

  const server = await startKubeletServer({
    servingCertPem: certificates.servingCertPem,
    servingKeyPem: certificates.servingKeyPem,
    caPem: certificates.caPem,
    clientCertPem: certificates.kubeletClientCertPem,
    sandboxOf: (namespace, name) => controller?.sandboxOf(namespace, name),
    dropAfterBytes: (sandbox) => controller?.knobsOf(sandbox).dropStreamAfterBytes,
    log,
  }).catch(async (error: unknown) => {
    await addresses.release();
    throw error;
  });
  const killNow = () => controller?.killAll();
  process.once('exit', killNow);

  const stop = async () => {
    process.removeListener('exit', killNow);
    for (const stopper of stoppers) stopper();
    // A deletion under way waits for its grace period; stopping does not.
    controller?.killAll();
    await Promise.all([podQueue.stop(), nodeQueue.stop()]);
    await controller?.removeAll();
    await server.close();
    await addresses.release();
    rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    const adopt = async (name: string) => {
      const body = {
        status: {
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
          daemonEndpoints: { kubeletEndpoint: { Port: server.port } },
        },
      };
      await core.patchNodeStatus({ name, body }, mergePatch);
    };
    // Pods of a namespace whose knobs changed, and Pods that a node change may let run or bind.
    let pods: Informer<CachedPod> | undefined;
    const requeuePods = (matches: (pod: CachedPod, key: string) => boolean) => {
      for (const key of pods?.keys() ?? []) {
        const pod = pods?.get(key);
        if (pod && matches(pod, key)) podQueue.add(key);
      }
    };
    const scopes = await startNamespaceScopes({
      kubeConfig,
      onChange: (namespace) => requeuePods((_, key) => splitKey(key).namespace === namespace),
      log,
    });
    stoppers.push(() => scopes.stop());
    const nodes = await startInformer<CachedNode>({
      kubeConfig,
      resource: 'nodes',
      onChange: (key, node) => {
        if (node && !servesNode(node, server.port)) nodeQueue.add(key);
        const name = splitKey(key).name;
        requeuePods((pod) => !pod.spec?.nodeName || pod.spec.nodeName === name);
      },
      log,
    });
    stoppers.push(() => nodes.stop());
    pods = await startInformer<CachedPod>({
      kubeConfig,
      resource: 'pods',
      onChange: (key, pod) => {
        podQueue.add(key);
        // A Pod that went away or finished may leave room for one that waits for a node.
        if (!pod || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
          requeuePods((other) => !other.spec?.nodeName);
      },
      log,
    });
    stoppers.push(() => pods?.stop());
    const podCache = pods;
    controller = createPodController({
      kubeConfig,
      pods: podCache,
      nodes,
      ips,
      dataDir,
      scopeOf: scopes.of,
      requeue: (key, ms) => (ms === undefined ? podQueue.add(key) : podQueue.addAfter(key, ms)),
      isIdle: options.idlePods ?? (() => false),
      log,
    });

    await createSimulatedNode(kubeConfig, { name: nodeName, allocatable: defaultAllocatable });
    await adopt(nodeName);
    nodeQueue.start(async (key) => {
      const node = nodes.get(key);
      if (node && !servesNode(node, server.port)) await adopt(splitKey(key).name);
    });
    podQueue.start(controller.reconcile);
  } catch (error) {
    await stop();
    throw error;
  }

  let stopped = false;
  return {
    nodeName,
    kubeletUrl: `https://127.0.0.1:${server.port}`,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stop();
    },
  };
}
