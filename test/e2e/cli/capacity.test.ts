import { beforeAll, describe, expect, it } from 'vitest';
import { installKubevirtCrds } from '../../../src/testing/kubevirt/crds.js';
import { createSimulatedNode, setPermittedHostDevices } from '../../../src/testing/kubevirt/nodes.js';
import { usePrivateCluster } from '../../support/cluster.js';
import { cliEnv, createGoldenVm, createNamespace, jsonOf, runCli } from './cli-support.js';

// The plan prints every node of the cluster and reads the KubeVirt CR, which other tests change on the shared
// plane: this file has a control plane of its own. Nothing is cloned or run, so it needs only KubeVirt's CRDs,
// and no node agent adds a node of its own to the plan.
const cluster = usePrivateCluster({ kubevirt: 'none', nodeAgent: false });
beforeAll(() => installKubevirtCrds(cluster().kubeConfig));

/** `corral-vdi <args> --kubeconfig <the test cluster>`. */
function cli(args: string[], env = cliEnv()) {
  return runCli([...args, '--kubeconfig', cluster().kubeconfigPath], env);
}

describe('corral-vdi troubleshooting cases', () => {
  it('refuses a pool the device capacity cannot hold, before it clones anything, and plans it', async () => {
    const namespace = await createNamespace(cluster(), 'capacity');
    await setPermittedHostDevices(cluster().kubeConfig, {
      pciHostDevices: [{ resourceName: 'example.com/cli-gpu', pciVendorSelector: '10DE:2236' }],
    });
    await createSimulatedNode(cluster().kubeConfig, {
      name: 'cli-gpu-node',
      allocatable: { 'example.com/cli-gpu': '2' },
    });
    await createGoldenVm(cluster(), namespace, 'golden-gpu', {
      gpus: [{ name: 'gpu1', deviceName: 'example.com/cli-gpu' }],
    });

    const refused = await cli([
      'pool',
      'create',
      'gpupool',
      '--from',
      'golden-gpu',
      '--size',
      '3',
      '-n',
      namespace,
    ]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    const lines = refused.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'error: insufficient device capacity for "golden-gpu": each member cloned from it needs 1 × ' +
        'example.com/cli-gpu (pci-passthrough) on one node; the nodes can host 2 of 3 members now, 1 short.',
    );
    expect(lines).toContain(
      '    cli-gpu-node: example.com/cli-gpu 2 allocatable, 0 in use, 2 free → hosts 2',
    );
    expect((await cli(['pool', 'list', '-n', namespace])).stdout).toBe(
      `no pools in namespace ${namespace}\n`,
    );

    const fits = await cli(['pool', 'plan', '--from', 'golden-gpu', '--size', '2', '-n', namespace]);
    expect(fits).toEqual({
      code: 0,
      stdout: [
        '2 members of "golden-gpu" fit: each needs 1 × example.com/cli-gpu on one node; the nodes can host 2 now',
        '',
        'NODE          RESOURCE             KIND             ALLOCATABLE  IN USE  FREE  PER MEMBER  HOSTS',
        'cli-gpu-node  example.com/cli-gpu  pci-passthrough  2            0       2     1           2',
        '',
      ].join('\n'),
      stderr: '',
    });
    const tooMany = await cli(['pool', 'plan', '--from', 'golden-gpu', '--size', '3', '-n', namespace]);
    expect(tooMany.code).toBe(1);
    expect(tooMany.stdout).toContain('3 members of "golden-gpu" do not fit');
    expect(tooMany.stderr).toMatch(
      /^error: insufficient device capacity for "golden-gpu": .* Free units by stopping VMs that hold them, add nodes with these devices, or ask for fewer members\.\n$/,
    );
    const json = jsonOf<{ fits: boolean; plan: { kind: string; shortfall: number } }>(
      await cli(['pool', 'plan', '--from', 'golden-gpu', '--size', '3', '-n', namespace, '-o', 'json']),
    );
    expect(json).toMatchObject({ fits: false, plan: { kind: 'reject', shortfall: 1 } });

    const plain = await createNamespace(cluster(), 'capacity-plain');
    await createGoldenVm(cluster(), plain, 'golden-desktop');
    const noDevices = await cli(['pool', 'plan', '--from', 'golden-desktop', '--size', '50', '-n', plain]);
    expect(noDevices).toEqual({
      code: 0,
      stdout: '50 members of "golden-desktop" fit: it asks for no host devices\n',
      stderr: '',
    });
  });
});
