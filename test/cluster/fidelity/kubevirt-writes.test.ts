import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createPool, resizePool } from '../../../src/pools/pool-service.js';
import { loadFixtures } from '../../../src/testing/fixtures.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { stoppedVm, usePrivateCluster, waitForRunningVmi } from '../../support/cluster.js';
import { findDefaultedFields, findLostFields } from '../../support/kubevirt-fidelity.js';

// A cluster of its own, so the record holds this file's writes alone; KubeVirt's own controllers judge them.
const cluster = usePrivateCluster({ recordKubevirtWrites: true, kubevirt: 'real' });
/**
 * What KubeVirt's VM mutator adds to every VM it admits. The SDK reads none of them (it reads a VM's
 * `domain.devices`, their interfaces and the template's `nodeSelector`), and a member's clone gives it a firmware
 * UUID of its own.
 */
const mutatorDefaults = [
  'virtualmachines spec.template.spec.architecture',
  'virtualmachines spec.template.spec.domain.firmware.serial',
  'virtualmachines spec.template.spec.domain.firmware.uuid',
  'virtualmachines spec.template.spec.domain.machine.type',
  'virtualmachines spec.template.spec.domain.resources',
];
/** What the mutator of one minor release adds beside those; a release not named here needs the same look. */
const releaseMutatorDefaults: Record<string, string[]> = {
  // the template's metadata as Go wrote it then, with an empty `creationTimestamp: null`
  'v1.6': ['virtualmachines spec.template.metadata.creationTimestamp'],
  // the PCI topology the guest's devices are placed by
  'v1.9': ['virtualmachines spec.template.metadata.annotations.kubevirt.io/pci-topology-version'],
};

/** The defaults of the KubeVirt release that runs (`v1.9.0` → its `v1.9` entries). */
function mutatorDefaultsOf(version: string): string[] {
  const minor = /^v\d+\.\d+/.exec(version)?.[0] ?? version;
  return [...mutatorDefaults, ...(releaseMutatorDefaults[minor] ?? [])].sort();
}

// KubeVirt's VMs and clones have a status subresource; its VMIs do not.
const statusSubresource = new Set(['virtualmachines', 'virtualmachineclones']);

async function namespaceFor(name: string): Promise<Vdi> {
  await cluster()
    .kubeConfig.makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } });
  return createVdi({ kubeConfig: cluster().kubeConfig, namespace: name });
}

/** Waits for `count` members of `pool`, each but the `held` one showing Stopped. */
async function waitForStopped(vdi: Vdi, pool: string, count: number, held?: string): Promise<void> {
  await waitFor(() => vdi.context.cluster.listVms(vdi.namespace, `corral.dev/vdi-pool=${pool}`), {
    describe: `${count} members of ${pool} to show Stopped`,
    until: (vms) =>
      vms.length === count &&
      vms.every((vm) => vm.metadata.name === held || vm.status?.printableStatus === 'Stopped'),
  });
}

describe("what the SDK writes to KubeVirt is what the apiserver keeps, on KubeVirt's own controllers", () => {
  it('stores every field of every write of the walkthrough flows as sent, and defaults nothing the SDK misreads', async () => {
    // VM pools: a create from a golden VM, claims that start members, a grow and a shrink
    const vms = await namespaceFor('fidelity-vm');
    await vms.context.cluster.createVm(vms.namespace, stoppedVm('golden'));
    await createPool(vms.context, { name: 'devpool', from: 'golden', size: 2 });
    await waitForStopped(vms, 'devpool', 2);
    const alice = await vms.claim({ pool: 'devpool', identity: 'alice' });
    await waitForRunningVmi(vms.context.cluster, vms.namespace, alice.member);
    await resizePool(vms.context, { name: 'devpool', size: 3 });
    await waitForStopped(vms, 'devpool', 3, alice.member);
    await resizePool(vms.context, { name: 'devpool', size: 2 });

    // an ephemeral pool: a release recreates the member from the golden VM
    await createPool(vms.context, { name: 'eph', from: 'golden', size: 1, ephemeral: true });
    await waitForStopped(vms, 'eph', 1);
    const bob = await vms.claim({ pool: 'eph', identity: 'bob' });
    const before = await vms.context.cluster.getVm(vms.namespace, bob.member);
    await waitForRunningVmi(vms.context.cluster, vms.namespace, bob.member);
    await vms.release({ member: bob.member, identity: 'bob' });
    await waitFor(() => vms.context.cluster.getVm(vms.namespace, bob.member), {
      describe: `${bob.member} to be recreated`,
      until: (vm) => vm !== undefined && vm.metadata.uid !== before?.metadata.uid,
    });
    await waitForStopped(vms, 'eph', 1);

    // v0.6.0 adoption: a claim takes over the member its label gives the identity
    const legacy = await namespaceFor('fidelity-legacy');
    for (const vm of loadFixtures('v0.6.0')) await legacy.context.cluster.createVm(legacy.namespace, vm);
    expect(await legacy.claim({ pool: 'legacypool', identity: 'alice' })).toMatchObject({ adopted: true });

    // a container pool writes Pods and Services, never KubeVirt's objects
    const containers = await namespaceFor('fidelity-ct');
    await containers.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1 } });
    await containers.reconcileCtPool({ name: 'devbox' });

    const writes = cluster().kubevirtWrites();
    const kinds = new Set(
      writes.map(
        (write) => `${write.verb} ${write.resource}${write.subresource ? `/${write.subresource}` : ''}`,
      ),
    );
    // the flows reached every kind of write the SDK makes (KubeVirt's controllers write as themselves, unrecorded)
    expect([...kinds]).toEqual(
      expect.arrayContaining([
        'create virtualmachines',
        'create virtualmachineclones',
        'patch virtualmachines',
      ]),
    );
    expect(writes.filter((write) => write.namespace === containers.namespace)).toEqual([]);
    expect(findLostFields(writes, statusSubresource)).toEqual([]);
    // Each was checked against what reads it; a new one needs the same look.
    expect(findDefaultedFields(writes)).toEqual(mutatorDefaultsOf(cluster().realKubevirt?.version ?? ''));
  });

  it('names a field that the schema prunes', async () => {
    const vdi = await namespaceFor('fidelity-misspelled');
    const vm = stoppedVm('misspelled');
    const spec = vm.spec.template?.spec as { domain: { devices: Record<string, unknown> } };
    spec.domain.devices.autoattachGraphicDevice = false;
    await vdi.context.cluster.createVm(vdi.namespace, vm);
    const writes = cluster()
      .kubevirtWrites()
      .filter((write) => write.namespace === vdi.namespace);
    expect(writes.map((write) => `${write.verb} ${write.name}`)).toEqual(['create misspelled']);
    const lost = findLostFields(writes, statusSubresource);
    expect(lost).toEqual([
      {
        write: expect.stringMatching(/^create virtualmachines fidelity-misspelled\/misspelled$/),
        path: 'spec.template.spec.domain.devices.autoattachGraphicDevice',
        sent: false,
        stored: undefined,
      },
    ]);
  });
});
