import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import { readVmKnobs } from '../kubevirt/fault-knobs.js';
import { type Informer, startInformer } from '../kubevirt/informer.js';
import { httpStatusOf, kubevirtResources, mergePatch, unlessNotFound } from '../kubevirt/kube-calls.js';
import { startNamespaceScopes } from '../kubevirt/namespace-scope.js';
import { createSimulatedNode } from '../kubevirt/nodes.js';
import { KeyedWorkQueue } from '../kubevirt/work-queue.js';
import { waitFor } from '../wait-for.js';
import { type HandlerConsoles, startHandlerConsoles } from './handler-consoles.js';
import { type KubevirtCertificates, kubevirtNamespace } from './install.js';

/** The labels KubeVirt's launcher Pods select a node by, and the devices they request, as virt-handler reports them. */
const nodeLabels = {
  'kubevirt.io/schedulable': 'true',
  'machine-type.node.kubevirt.io/q35': 'true',
  'kubernetes.io/arch': 'amd64',
  'kubernetes.io/os': 'linux',
};
const kubevirtDevices = {
  'devices.kubevirt.io/kvm': '1k',
  'devices.kubevirt.io/tun': '1k',
  'devices.kubevirt.io/vhost-net': '1k',
};

/** Options of {@link startHandlerStandIn}. */
export interface HandlerStandInOptions {
  /** An administrator's configuration: the node, the handler Pod and the reads. */
  kubeConfig: KubeConfig;
  /** A kubeconfig of the `kubevirt-controller` service account: KubeVirt's VMI mutator keeps the status it writes. */
  controllerKubeconfig: string;
  nodeName: string;
  /** `status.allocatable` of the node beside KubeVirt's devices. */
  allocatable: Record<string, string>;
  version: string;
  /** KubeVirt's CA and the handler's serving pair, for the consoles virt-api dials. */
  certificates: KubevirtCertificates;
  log: (line: string) => void;
}

/** A running stand-in of virt-handler on one node. */
export interface HandlerStandIn {
  nodeName: string;
  /** Where the handler serves consoles: virt-api's `--console-server-port`. */
  consolePort: number;
  stop(): Promise<void>;
}

/** Whether a Pod is one of KubeVirt's whose image this node does not run (launcher or handler). */
export function isKubevirtNodePod(pod: V1Pod): boolean {
  const role = pod.metadata?.labels?.['kubevirt.io'];
  return role === 'virt-launcher' || role === 'virt-handler';
}

function isFinal(vmi: VirtualMachineInstance): boolean {
  return vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed';
}

/**
 * Plays virt-handler for one node, as KubeVirt's own KWOK density test does, plus what that leaves out: labels the
 * node and reports KubeVirt's devices, runs a handler Pod there that serves the guest's consoles to virt-api
 * ({@link startHandlerConsoles}), turns a VMI that virt-controller
 * scheduled onto the node `Running` with its launcher Pod's address as the guest's (as masquerade networking
 * shows it), and ends a VMI being deleted as a shut-down guest (`Succeeded`), so that virt-controller removes its
 * launcher Pod and its finalizer. Status writes go as `kubevirt-controller`, whose writes KubeVirt keeps.
 *
 * The guest follows the VM's knobs as the simulator's does (docs/simulator.md): `ip`, `start-delay-ms`,
 * `stop-delay-ms` and `never-ready`, with delays measured on the namespace's clock when it has one, and a paused
 * namespace's guests left as they are.
 */
export async function startHandlerStandIn(options: HandlerStandInOptions): Promise<HandlerStandIn> {
  const { kubeConfig, nodeName, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const controllerConfig = new KubeConfig();
  controllerConfig.loadFromString(options.controllerKubeconfig);
  const asController = controllerConfig.makeApiClient(CustomObjectsApi);
  const queue = new KeyedWorkQueue(8, log);

  // no heartbeat annotation: virt-controller counts a node without one as responsive
  await createSimulatedNode(kubeConfig, {
    name: nodeName,
    allocatable: { ...options.allocatable, ...kubevirtDevices },
    labels: nodeLabels,
  });

  const handlerPod = `virt-handler-${nodeName}`;
  await unlessNotFound(
    core.deleteNamespacedPod({ namespace: kubevirtNamespace, name: handlerPod, gracePeriodSeconds: 0 }),
  );
  await core.createNamespacedPod({
    namespace: kubevirtNamespace,
    body: {
      metadata: { name: handlerPod, labels: { 'kubevirt.io': 'virt-handler' } },
      spec: {
        nodeName,
        containers: [{ name: 'virt-handler', image: `quay.io/kubevirt/virt-handler:${options.version}` }],
      },
    },
  });

  const handlerAddress = await waitFor(
    async () =>
      (await core.readNamespacedPod({ namespace: kubevirtNamespace, name: handlerPod })).status?.podIP,
    { describe: `the handler Pod ${handlerPod} to run with an address`, until: (ip) => ip !== undefined },
  );
  const consoles: HandlerConsoles = await startHandlerConsoles({
    kubeConfig,
    address: handlerAddress ?? '',
    certificates: options.certificates,
    log,
  });

  const launcherAddress = async (vmi: VirtualMachineInstance): Promise<string | undefined> => {
    const { items } = await core.listNamespacedPod({
      namespace: vmi.metadata.namespace ?? '',
      labelSelector: `kubevirt.io/created-by=${vmi.metadata.uid ?? ''}`,
    });
    return items.find((pod) => pod.status?.phase === 'Running' && pod.status.podIP)?.status?.podIP;
  };

  const writeStatus = async (vmi: VirtualMachineInstance, status: Record<string, unknown>) => {
    const { namespace = '', name = '' } = vmi.metadata;
    try {
      // a VMI has no status subresource: its status is written with the object, at the version read
      await asController.patchNamespacedCustomObject(
        {
          ...kubevirtResources.vmi,
          namespace,
          name,
          body: { metadata: { resourceVersion: vmi.metadata.resourceVersion }, status },
        },
        mergePatch,
      );
    } catch (error) {
      // changed or gone meanwhile: its own event brings the next look
      if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
    }
  };

  let vmis: Informer<VirtualMachineInstance> | undefined;
  let vms: Informer<VirtualMachine> | undefined;
  // when each guest's start or shut-down is due, on its namespace's clock: `start <uid>` or `stop <uid>`
  const dueAt = new Map<string, number>();
  // the version of the event that first showed the VMI, or its deletion: its delay counts from the clock then
  const askedAt = new Map<string, string | undefined>();
  const scopes = await startNamespaceScopes({
    kubeConfig,
    onChange: (namespace) => {
      for (const key of vmis?.keys() ?? []) if (key.startsWith(`${namespace}/`)) queue.add(key);
    },
    log,
  });
  // Whether a guest's start or shut-down is due now; when it is not, it looks again when due (or clock moves).
  const isDue = async (key: string, step: string, delayMs: number): Promise<boolean> => {
    const namespace = key.slice(0, key.indexOf('/'));
    const scope = await scopes.of(namespace);
    if (scope.paused) return false;
    let due = dueAt.get(step);
    if (due === undefined) {
      const asked = scopes.clockAt(namespace, scope, askedAt.get(step));
      // the watch has not brought the namespace's latest clock yet: that event looks again
      if (asked === undefined) return false;
      due = asked + delayMs;
      dueAt.set(step, due);
    }
    if (scope.now >= due) return true;
    if (!scope.clocked) queue.addAfter(key, due - scope.now);
    return false;
  };
  const reconcile = async (key: string) => {
    const vmi = vmis?.get(key);
    if (!vmi || vmi.status?.nodeName !== nodeName || isFinal(vmi)) return;
    const knobs = readVmKnobs(vms?.get(key)?.metadata.annotations).knobs;
    const uid = vmi.metadata.uid ?? '';
    const now = new Date().toISOString();
    const transitions = (vmi.status?.phaseTransitionTimestamps as unknown[] | undefined) ?? [];
    if (vmi.metadata.deletionTimestamp) {
      if (!(await isDue(key, `stop ${uid}`, knobs.stopDelayMs))) return;
      log(`${key}: the guest shuts down`);
      for (const step of [`start ${uid}`, `stop ${uid}`]) {
        dueAt.delete(step);
        askedAt.delete(step);
      }
      await writeStatus(vmi, {
        phase: 'Succeeded',
        phaseTransitionTimestamps: [...transitions, { phase: 'Succeeded', phaseTransitionTimestamp: now }],
      });
      return;
    }
    if (vmi.status?.phase !== 'Scheduled' || knobs.neverReady) return;
    if (!(await isDue(key, `start ${uid}`, knobs.startDelayMs))) return;
    const address = knobs.ipAddress ?? (await launcherAddress(vmi));
    if (address === undefined) {
      queue.addAfter(key, 200);
      return;
    }
    const declared = vmi.spec?.domain?.devices?.interfaces as { name?: string }[] | undefined;
    log(`${key}: the guest runs at ${address}`);
    dueAt.delete(`start ${uid}`);
    askedAt.delete(`start ${uid}`);
    await writeStatus(vmi, {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: now }],
      interfaces: [
        {
          name: declared?.[0]?.name ?? 'default',
          ipAddress: address,
          ipAddresses: [address],
          interfaceName: 'eth0',
          infoSource: 'domain, guest-agent',
        },
      ],
      guestOSInfo: {},
      migrationTransport: 'Unix',
      phaseTransitionTimestamps: [...transitions, { phase: 'Running', phaseTransitionTimestamp: now }],
    });
  };

  vms = await startInformer<VirtualMachine>({
    kubeConfig,
    resource: kubevirtResources.vm,
    // a VM's knobs steer the VMI of its name
    onChange: (key) => queue.add(key),
    log,
  });
  vmis = await startInformer<VirtualMachineInstance>({
    kubeConfig,
    resource: kubevirtResources.vmi,
    onChange: (key, vmi) => {
      consoles.vmiChanged(key, vmi);
      const step = `${vmi?.metadata.deletionTimestamp ? 'stop' : 'start'} ${vmi?.metadata.uid}`;
      if (vmi && !askedAt.has(step)) askedAt.set(step, vmi.metadata.resourceVersion);
      queue.add(key);
    },
    log,
  });
  queue.start(reconcile);

  return {
    nodeName,
    consolePort: consoles.port,
    stop: async () => {
      vmis?.stop();
      vms?.stop();
      scopes.stop();
      await queue.stop();
      await consoles.close();
    },
  };
}
