import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { setSimulatorPaused } from '../../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { buildMemberClone, cloneNameFor } from '../../../src/vm/vm-clone-object.js';
import { recreateMember } from '../../../src/vm-pools/recreate-member.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe('recreating an ephemeral member', () => {
  it('refuses a member whose source annotation names itself before deleting it, since KubeVirt refuses a clone into its own source', async () => {
    const namespace = await createTestNamespace(cluster(), 'recreate-self');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const member = await vdi.context.cluster.createVm(namespace, {
      metadata: {
        name: 'eph-1',
        labels: { 'corral.dev/vdi-pool': 'eph', 'corral.dev/vdi-ephemeral': 'true' },
        annotations: { 'corral.dev/vdi-source': 'eph-1' },
      },
      spec: {
        runStrategy: 'Halted',
        template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
      },
    });

    const error = await recreateMember(vdi.context, { namespace, vm: 'eph-1' }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toContain('names itself as its golden VM');
    expect((await vdi.context.cluster.getVm(namespace, 'eph-1'))?.metadata.uid).toBe(member.metadata.uid);
    expect(await vdi.context.cluster.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it("finds the golden VM in a sibling's clone under way when the member and every sibling VM are gone", async () => {
    const namespace = await createTestNamespace(cluster(), 'recreate-gone');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const kube = vdi.context.cluster;
    await kube.createVm(namespace, {
      metadata: { name: 'golden' },
      spec: {
        runStrategy: 'Halted',
        template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
      },
    });
    await createPool(vdi.context, { name: 'eph', from: 'golden', size: 2, ephemeral: true });
    // as the pool create left it: labelled, so that a clone can add the pool label to its copy
    const golden = (await kube.getVm(namespace, 'golden'))!;
    // two resets killed part-way: eph-1's after its VM's delete, eph-2's once its clone was made and not yet done
    await setSimulatorPaused(cluster().kubeConfig, namespace, true);
    await kube.deleteVm(namespace, 'eph-1');
    await kube.deleteVm(namespace, 'eph-2');
    await kube.createClone(
      namespace,
      buildMemberClone({ namespace, pool: 'eph', member: 'eph-2', golden, ephemeral: true }),
    );

    // its claim, marked releasing, still names the pool
    await kube.createLease(namespace, {
      metadata: {
        name: 'corral-vdi-eph-1',
        labels: { 'corral.dev/vdi-pool': 'eph', 'corral.dev/vdi-member': 'eph-1' },
      },
      spec: { holderIdentity: 'alice', renewTime: new Date().toISOString(), leaseDurationSeconds: 3600 },
    });

    const recreated = recreateMember(vdi.context, { namespace, vm: 'eph-1' });
    const endedEarly = recreated.then(
      () => Promise.reject(new Error('the recreate returned before its clone was made')),
      (error: unknown) => Promise.reject(error),
    );
    const made = await Promise.race([
      waitFor(() => kube.getClone(namespace, cloneNameFor('eph-1')), {
        describe: "eph-1's clone to be made",
        until: (clone) => clone !== undefined,
      }),
      endedEarly,
    ]);
    expect(made?.spec.source.name).toBe('golden');
    await setSimulatorPaused(cluster().kubeConfig, namespace, false);
    await recreated;
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.annotations?.['corral.dev/vdi-source']).toBe(
      'golden',
    );
  });

  it('makes the only member of a pool again from the golden VM its claim recorded, after a reset stopped between the delete and the clone', async () => {
    const namespace = await createTestNamespace(cluster(), 'recreate-alone');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const kube = vdi.context.cluster;
    await kube.createVm(namespace, {
      metadata: { name: 'golden' },
      spec: {
        runStrategy: 'Halted',
        template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
      },
    });
    await createPool(vdi.context, { name: 'solo', from: 'golden', size: 1, ephemeral: true });
    const claimed = await vdi.claim({ pool: 'solo', identity: 'alice@example.com' });
    expect(
      (await kube.getLease(namespace, 'corral-vdi-solo-1'))?.metadata.annotations?.['corral.dev/vdi-source'],
    ).toBe('golden');
    // the reset's first write landed, and it stopped before its clone: nothing else names the golden VM
    await kube.deleteVm(namespace, claimed.member);
    await waitFor(() => kube.getVm(namespace, claimed.member), {
      describe: `${claimed.member} to go`,
      until: (vm) => vm === undefined,
    });

    await recreateMember(vdi.context, { namespace, vm: claimed.member });
    const made = await kube.getVm(namespace, claimed.member);
    expect([
      made?.metadata.annotations?.['corral.dev/vdi-source'],
      made?.metadata.labels?.['corral.dev/vdi-pool'],
    ]).toEqual(['golden', 'solo']);
  });
});
