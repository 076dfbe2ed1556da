import { describe, expect, it } from 'vitest';
import { planCapacity } from '../../../src/capacity/capacity-service.js';
import type { VdiError } from '../../../src/errors.js';
import { isVdiError } from '../../../src/errors.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { createPool, resizePool, setPool } from '../../../src/pools/pool-service.js';
import { keepPoolSpares } from '../../../src/spares/keep-spares.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createSimulatedNode, setPermittedHostDevices } from '../../../src/testing/kubevirt/nodes.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, usePrivateCluster } from '../../support/cluster.js';

// It sets the cluster's nodes and the KubeVirt CR's permitted devices, which other tests must not see. The
// simulator's lane (docs/testing.md): its node knob places a VMI on one of several GPU nodes, and the handler
// stand-in of KubeVirt's own controllers plays one node.
const cluster = usePrivateCluster({ kubevirt: 'simulated' });

async function failureOf(promise: Promise<unknown>): Promise<VdiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isVdiError(error)) throw new Error(`expected a VdiError, got ${String(error)}`);
  return error;
}

async function poolVms(kube: KubeCluster, namespace: string, pool: string): Promise<string[]> {
  return (await kube.listVms(namespace, `corral.dev/vdi-pool=${pool}`))
    .map((vm) => vm.metadata.name ?? '')
    .sort();
}

function gpuVm(name: string, gpu: string, extra: Partial<VirtualMachine['spec']> = {}): VirtualMachine {
  return {
    metadata: { name },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: { memory: { guest: '128Mi' }, devices: { gpus: [{ name: 'gpu1', deviceName: gpu }] } },
        },
      },
      ...extra,
    },
  };
}

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const gpu = `example.com/${namespace}-a10`;
  await setPermittedHostDevices(cluster().kubeConfig, {
    pciHostDevices: [{ resourceName: gpu, pciVendorSelector: '10DE:2236' }],
  });
  for (const index of [1, 2]) {
    await createSimulatedNode(cluster().kubeConfig, {
      name: `${namespace}-gpu-${index}`,
      allocatable: { [gpu]: '1' },
    });
  }
  return { namespace, vdi, ctx: vdi.context, kube: vdi.context.cluster, gpu };
}

describe('capacity admission against the cluster', () => {
  it('counts a VMI that waits for a node against the cluster, and refuses the pool it would crowd out', async () => {
    const { namespace, ctx, kube, gpu } = await setUp('waiting-vmi');
    await kube.createVm(namespace, gpuVm('golden', gpu));
    expect(await planCapacity(ctx, { from: 'golden', size: 2 })).toMatchObject({ kind: 'admit', fits: 2 });

    // a VM that wants to run but whose VMI the simulator keeps in Scheduling, without a node
    const waiting = gpuVm('waiting', gpu, { runStrategy: 'Always' });
    waiting.metadata.annotations = { [simulatorAnnotations.neverReady]: 'true' };
    await kube.createVm(namespace, waiting);
    await expect
      .poll(async () => {
        const vmi = await kube.getVmi(namespace, 'waiting');
        return [vmi?.status?.phase, vmi?.status?.nodeName];
      })
      .toEqual(['Scheduling', undefined]);

    const plan = await planCapacity(ctx, { from: 'golden', size: 2 });
    expect(plan).toMatchObject({
      kind: 'reject',
      reason: 'insufficient',
      fits: 1,
      shortfall: 1,
      unscheduled: { vmis: [`${namespace}/waiting`], members: 1 },
    });
    expect(plan.kind === 'reject' && plan.message).toContain(
      `VMIs waiting for a node (${namespace}/waiting)`,
    );
    expect((await planCapacity(ctx, { from: 'golden', size: 1 })).kind).toBe('admit');

    const refused = await createPool(ctx, { name: 'gpupool', from: 'golden', size: 2 }).catch(
      (error: unknown) => error,
    );
    expect(isVdiError(refused, 'INSUFFICIENT_CAPACITY')).toBe(true);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(await kube.listVms(namespace, 'corral.dev/vdi-pool=gpupool')).toEqual([]);
  });

  it('counts running spares as devices in use: the keeper starts only what fits, and pool set refuses more', async () => {
    const { namespace, ctx, kube, gpu } = await setUp('spares');
    await kube.createVm(namespace, gpuVm('golden', gpu));
    // the pool's members, each placed on a node of its own by the simulator's node knob
    for (const index of [1, 2, 3]) {
      const member = gpuVm(`gpupool-${index}`, gpu);
      member.metadata.labels = { 'corral.dev/vdi-pool': 'gpupool' };
      member.metadata.annotations = {
        'corral.dev/vdi-source': 'golden',
        [simulatorAnnotations.node]: `${namespace}-gpu-${Math.min(index, 2)}`,
      };
      await kube.createVm(namespace, member);
    }
    // something else already runs on the second node's GPU
    const other = gpuVm('other', gpu, { runStrategy: 'Always' });
    other.metadata.annotations = { [simulatorAnnotations.node]: `${namespace}-gpu-2` };
    await kube.createVm(namespace, other);
    await waitFor(async () => (await kube.getVmi(namespace, 'other'))?.status?.phase === 'Running', {
      describe: 'the other VM to run on the second node',
    });

    const refused = await setPool(ctx, { name: 'gpupool', minReady: 2 }).catch((error: unknown) => error);
    expect(isVdiError(refused, 'INSUFFICIENT_CAPACITY')).toBe(true);
    expect(
      (await kube.getVm(namespace, 'gpupool-1'))?.metadata.annotations?.['corral.dev/vdi-min-ready'],
    ).toBeUndefined();

    await setPool(ctx, { name: 'gpupool', minReady: 1 });
    expect(await keepPoolSpares(ctx, { name: 'gpupool' })).toMatchObject({
      started: ['gpupool-1'],
      short: 0,
    });
    await waitFor(async () => (await kube.getVmi(namespace, 'gpupool-1'))?.status?.phase === 'Running', {
      describe: 'the spare to run',
    });
    // the running spare holds the last free GPU, so any other admission sees none
    expect(await planCapacity(ctx, { from: 'golden', size: 1 })).toMatchObject({ kind: 'reject', fits: 0 });

    // a minReady written by hand past what fits: the keeper starts nothing more and says how many are short
    await kube.patchVm(namespace, 'gpupool-1', {
      metadata: { annotations: { 'corral.dev/vdi-min-ready': '3' } },
    });
    expect(await keepPoolSpares(ctx, { name: 'gpupool' })).toMatchObject({ started: [], short: 2 });
  });

  it('lists an SR-IOV interface of the golden VM as uncounted, naming its NetworkAttachmentDefinition', async () => {
    const { namespace, ctx, kube, gpu } = await setUp('sriov');
    const golden = gpuVm('golden', gpu);
    const spec = golden.spec.template?.spec ?? {};
    spec.networks = [{ name: 'fast', multus: { networkName: `${namespace}/sriov-vf` } }];
    const devices = spec.domain?.devices ?? {};
    devices.interfaces = [{ name: 'fast', sriov: {} }];
    await kube.createVm(namespace, golden);

    const plan = await planCapacity(ctx, { from: 'golden', size: 2 });
    expect(plan).toMatchObject({
      kind: 'admit',
      fits: 2,
      uncounted: [
        {
          entry: 'interfaces/fast',
          reason: expect.stringContaining(`NetworkAttachmentDefinition "${namespace}/sriov-vf"`),
        },
      ],
    });
  });

  it('refuses a pool that does not fit the GPUs before any clone exists, with the per-node table', async () => {
    const { ctx, kube, namespace, gpu } = await setUp('capacity');
    // the first node takes two
    await createSimulatedNode(cluster().kubeConfig, {
      name: `${namespace}-gpu-1`,
      allocatable: { [gpu]: '2' },
    });
    // a running VM holds one GPU on the first node
    const holder = gpuVm('holder', gpu, { runStrategy: 'Always' });
    holder.metadata.annotations = { [simulatorAnnotations.node]: `${namespace}-gpu-1` };
    await kube.createVm(namespace, holder);
    await waitFor(async () => (await kube.getVmi(namespace, 'holder'))?.status?.phase === 'Running', {
      describe: 'the holder to run',
    });
    await kube.createVm(namespace, gpuVm('golden', gpu));

    const error = await failureOf(createPool(ctx, { name: 'gpupool', from: 'golden', size: 3 }));
    expect(error.code).toBe('INSUFFICIENT_CAPACITY');
    expect(error.details).toMatchObject({ shortfall: 1, fits: 2, reason: 'insufficient' });
    expect(error.details.table).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          node: `${namespace}-gpu-1`,
          resource: gpu,
          allocatable: 2,
          inUse: 1,
          free: 1,
          hostsMembers: 1,
        }),
        expect.objectContaining({
          node: `${namespace}-gpu-2`,
          resource: gpu,
          allocatable: 1,
          inUse: 0,
          free: 1,
          hostsMembers: 1,
        }),
      ]),
    );
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(await poolVms(kube, namespace, 'gpupool')).toEqual([]);

    expect((await planCapacity(ctx, { from: 'golden', size: 2 })).kind).toBe('admit');
    expect((await createPool(ctx, { name: 'gpupool', from: 'golden', size: 2 })).members).toEqual([
      'gpupool-1',
      'gpupool-2',
    ]);

    // the two stopped members need room too before the pool may grow
    const grow = await failureOf(resizePool(ctx, { name: 'gpupool', size: 3 }));
    expect(grow.code).toBe('INSUFFICIENT_CAPACITY');
    expect(await poolVms(kube, namespace, 'gpupool')).toEqual(['gpupool-1', 'gpupool-2']);
  });
});
