import {
  ApiException,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { rawRequest } from '../../../src/kube/raw-request.js';
import type {
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
} from '../../../src/kubevirt-types.js';

const vmRef = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' } as const;
const vmiRef = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachineinstances' } as const;
const cloneRef = { group: 'clone.kubevirt.io', version: 'v1beta1', plural: 'virtualmachineclones' } as const;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A VM with a template that carries devices, labels and an interface, as golden VMs do. */
export function sampleVm(
  name: string,
  spec: Partial<VirtualMachine['spec']> = {},
  annotations: Record<string, string> = {},
): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, annotations },
    spec: {
      runStrategy: 'Halted',
      template: {
        metadata: { labels: { app: 'desktop' } },
        spec: {
          domain: {
            devices: {
              interfaces: [{ name: 'default', masquerade: {} }],
              gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10' }],
            },
          },
          networks: [{ name: 'default', pod: {} }],
        },
      },
      ...spec,
    },
  };
}

/** Small typed calls on VMs, VMIs and clones of one namespace. */
export function kubevirtObjects(kubeConfig: KubeConfig, namespace: string) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const get = async <T>(
    ref: typeof vmRef | typeof vmiRef | typeof cloneRef,
    name: string,
  ): Promise<T | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ ...ref, namespace, name })) as T;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  };
  return {
    createVm: async (vm: VirtualMachine) =>
      (await api.createNamespacedCustomObject({ ...vmRef, namespace, body: vm })) as VirtualMachine,
    getVm: (name: string) => get<VirtualMachine>(vmRef, name),
    getVmi: (name: string) => get<VirtualMachineInstance>(vmiRef, name),
    getClone: (name: string) => get<VirtualMachineClone>(cloneRef, name),
    patchVm: async (name: string, body: unknown) =>
      (await api.patchNamespacedCustomObject(
        { ...vmRef, namespace, name, body },
        mergePatch,
      )) as VirtualMachine,
    // KubeVirt's VMI has no status subresource: its status is patched on the object
    patchVmiStatus: async (name: string, status: unknown) =>
      api.patchNamespacedCustomObject({ ...vmiRef, namespace, name, body: { status } }, mergePatch),
    deleteVm: async (name: string) => api.deleteNamespacedCustomObject({ ...vmRef, namespace, name }),
    createClone: async (clone: VirtualMachineClone, version: 'v1beta1' | 'v1alpha1' = 'v1beta1') =>
      (await api.createNamespacedCustomObject({
        ...cloneRef,
        version,
        namespace,
        body: { apiVersion: `clone.kubevirt.io/${version}`, kind: 'VirtualMachineClone', ...clone },
      })) as VirtualMachineClone,
  };
}

/** The answer of a start, stop or restart PUT: its HTTP status and parsed body. */
export interface SubresourceAnswer {
  status: number;
  body: { reason?: string; message?: string; code?: number } | undefined;
}

/** PUTs a VM subresource through the apiserver (and so through RBAC), as virtctl does. */
export async function putSubresource(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  action: 'start' | 'stop' | 'restart',
): Promise<SubresourceAnswer> {
  const path = `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${name}/${action}`;
  try {
    const text = await rawRequest(kubeConfig, 'PUT', path, {});
    return { status: 202, body: text ? JSON.parse(text) : undefined };
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    let body: SubresourceAnswer['body'];
    try {
      body = JSON.parse(String(error.body));
    } catch {
      body = undefined;
    }
    return { status: error.code, body };
  }
}
