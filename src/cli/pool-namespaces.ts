import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { poolLabel } from '../keys.js';
import { callWithRetry } from '../kube/retry.js';

/** The namespaces that have pool members, read with one cluster-wide list of labeled VMs (for `pool list -A`). */
export async function listPoolNamespaces(kubeConfig: KubeConfig): Promise<string[]> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const list = (await callWithRetry('list VirtualMachines in every namespace', () =>
    api.listClusterCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      labelSelector: poolLabel,
    }),
  )) as { items: Array<{ metadata?: { namespace?: string } }> };
  const namespaces = new Set(
    list.items.map((vm) => vm.metadata?.namespace ?? '').filter((namespace) => namespace !== ''),
  );
  return [...namespaces].sort();
}
