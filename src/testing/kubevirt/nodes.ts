import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import type { NodeObject } from '../../kube-objects.js';
import type { PermittedHostDevice, PermittedHostDevices } from '../../kubevirt-types.js';
import { ensureNamespace, httpStatusOf, kubevirtResources, unlessNotFound, upsert } from './kube-calls.js';

/** Options of {@link createSimulatedNode}. @category testing */
export interface SimulatedNodeOptions {
  name: string;
  /** `status.allocatable` (and `status.capacity`), such as `{ 'nvidia.com/A10': '4', cpu: '32' }`. */
  allocatable: Record<string, string>;
  labels?: Record<string, string>;
}

/** The namespace and name of the KubeVirt CR, where KubeVirt's operator expects it. */
export const kubevirtCrRef = { namespace: 'kubevirt', name: 'kubevirt' } as const;

/**
 * Creates a Node (or updates one of that name) whose status shows `allocatable` and a `Ready` condition, for
 * capacity tests. Nothing ages it; a running node agent points its kubelet endpoint at itself and runs the Pods
 * bound to it.
 *
 * @example
 * ```ts
 * await createSimulatedNode(cluster.kubeConfig, { name: 'gpu-1', allocatable: { 'nvidia.com/A10': '2' } });
 * ```
 * @throws `VdiError` `INVALID_INPUT` when the name is empty.
 * @category testing
 */
export async function createSimulatedNode(
  kubeConfig: KubeConfig,
  options: SimulatedNodeOptions,
): Promise<NodeObject> {
  if (!options.name.trim()) throw new VdiError('INVALID_INPUT', 'createSimulatedNode needs a node name.');
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const { name } = options;
  const labels = { 'kubernetes.io/hostname': name, ...options.labels };
  // The node agent writes addresses into every Node's status: read again when it wrote first.
  for (;;) {
    let node: V1Node | undefined = await unlessNotFound(core.readNode({ name }));
    try {
      if (node === undefined) node = await core.createNode({ body: { metadata: { name, labels } } });
      else node = await core.replaceNode({ name, body: { ...node, metadata: { ...node.metadata, labels } } });
      const now = new Date();
      const status = {
        ...node.status,
        allocatable: options.allocatable,
        capacity: options.allocatable,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'simulated node',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
      };
      const written = await core.replaceNodeStatus({ name, body: { ...node, status } });
      return written as unknown as NodeObject;
    } catch (error) {
      if (httpStatusOf(error) !== 409) throw error;
    }
  }
}

/**
 * Sets `spec.configuration.permittedHostDevices` of the KubeVirt CR `kubevirt/kubevirt`, creating the namespace
 * and the CR when missing. The whole `permittedHostDevices` is replaced. As KubeVirt's schema demands, a PCI
 * device needs its `pciVendorSelector`, a mediated device its `mdevNameSelector`.
 *
 * @example
 * ```ts
 * await setPermittedHostDevices(cluster.kubeConfig, {
 *   pciHostDevices: [{ resourceName: 'nvidia.com/A10', pciVendorSelector: '10DE:2236', externalResourceProvider: true }],
 * });
 * ```
 * @category testing
 */
export async function setPermittedHostDevices(
  kubeConfig: KubeConfig,
  // KubeVirt's schema requires each kind's selector, so a CR without them is refused as on a real cluster
  permitted: PermittedHostDevices & {
    pciHostDevices?: (PermittedHostDevice & { pciVendorSelector: string })[];
    mediatedDevices?: (PermittedHostDevice & { mdevNameSelector: string })[];
    usb?: (PermittedHostDevice & { selectors?: { vendor: string; product: string }[] })[];
  },
): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  await ensureNamespace(kubeConfig, kubevirtCrRef.namespace);
  const ref = { ...kubevirtResources.kubevirt, ...kubevirtCrRef };
  type KubevirtCr = { metadata: Record<string, unknown>; spec?: { configuration?: Record<string, unknown> } };
  await upsert(
    async () => (await custom.getNamespacedCustomObject(ref)) as KubevirtCr,
    () =>
      custom.createNamespacedCustomObject({
        ...ref,
        body: {
          apiVersion: 'kubevirt.io/v1',
          kind: 'KubeVirt',
          metadata: { name: ref.name, namespace: ref.namespace },
          spec: { configuration: { permittedHostDevices: permitted } },
        },
      }),
    (existing) => {
      const spec = {
        ...existing.spec,
        configuration: { ...existing.spec?.configuration, permittedHostDevices: permitted },
      };
      return custom.replaceNamespacedCustomObject({ ...ref, body: { ...existing, spec } });
    },
  );
}
