import { CustomObjectsApi } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { installKubevirtCrds, setPermittedHostDevices } from '../../../src/testing/kubevirt/index.js';
import { usePrivateCluster } from '../../support/cluster.js';

// The KubeVirt CR is cluster-wide and replaced whole: on the shared plane another test could write it between
// this test's write and its read. It needs only KubeVirt's CRDs, not the simulator.
const cluster = usePrivateCluster({ kubevirt: 'none' });
beforeAll(() => installKubevirtCrds(cluster().kubeConfig));

describe('the capacity helpers', () => {
  it('creates the KubeVirt CR with permittedHostDevices, then replaces them', async () => {
    const { kubeConfig } = cluster();
    await setPermittedHostDevices(kubeConfig, {
      pciHostDevices: [
        { resourceName: 'nvidia.com/A10', pciVendorSelector: '10DE:2236', externalResourceProvider: true },
      ],
    });
    await setPermittedHostDevices(kubeConfig, {
      usb: [{ resourceName: 'example.com/token', selectors: [] }],
    });

    const kubevirt = (await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'kubevirts',
      namespace: 'kubevirt',
      name: 'kubevirt',
    })) as { spec: { configuration: { permittedHostDevices: unknown } } };
    expect(kubevirt.spec.configuration.permittedHostDevices).toEqual({
      usb: [{ resourceName: 'example.com/token', selectors: [] }],
    });
  });
});
