import { readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goldenLabel } from '../../../src/keys.js';
import { createPool, deletePool } from '../../../src/pools/pool-service.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { stoppedVm, usePrivateCluster, waitForRunningVmi } from '../../support/cluster.js';
import { connectRfb, createByteReader } from '../../support/rfb-client.js';

// KubeVirt's own virt-api and virt-controller, with the stand-in of virt-handler on the node agent's node.
const cluster = usePrivateCluster({ kubevirt: 'real' });

let namespaceCount = 0;
async function namespaceFor(prefix: string): Promise<Vdi> {
  namespaceCount += 1;
  const name = `${prefix}-${namespaceCount}`;
  await cluster()
    .kubeConfig.makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } });
  return createVdi({ kubeConfig: cluster().kubeConfig, namespace: name });
}

/** The field managers that wrote an object, as the apiserver records them. */
function managersOf(object: unknown): string[] {
  const fields = (object as { metadata?: { managedFields?: { manager?: string }[] } } | undefined)?.metadata
    ?.managedFields;
  return (fields ?? []).map((field) => field.manager ?? '');
}

describe("KubeVirt's own controllers make what the SDK asks for", () => {
  const seen: { kind: string; name: string; namespace: string }[] = [];
  const watches: AbortController[] = [];
  let stopped = false;
  beforeAll(async () => {
    // every snapshot and restore a clone makes, seen as it is created: KubeVirt removes both once the clone ends
    const watch = new Watch(cluster().kubeConfig);
    type Seen = { kind: string; metadata: { name: string; namespace: string; resourceVersion?: string } };
    // a watch the apiserver ends is opened again from the last version seen, so no creation goes unseen
    const follow = async (plural: string, resourceVersion?: string): Promise<void> => {
      let last = resourceVersion;
      const query = last === undefined ? {} : { resourceVersion: last };
      watches.push(
        await watch.watch(
          `/apis/snapshot.kubevirt.io/v1beta1/${plural}`,
          query,
          (phase, object: Seen) => {
            last = object.metadata.resourceVersion ?? last;
            if (phase === 'ADDED') seen.push({ kind: object.kind, ...object.metadata });
          },
          () => {
            if (!stopped) void follow(plural, last);
          },
        ),
      );
    };
    for (const plural of ['virtualmachinesnapshots', 'virtualmachinerestores']) await follow(plural);
  });
  afterAll(() => {
    stopped = true;
    for (const watch of watches) watch.abort();
  });

  it('creates a pool from a golden VM without labels and from one with labels, and both finish', async () => {
    const vdi = await namespaceFor('real-pools');
    await vdi.context.cluster.createVm(vdi.namespace, stoppedVm('bare'));
    await vdi.context.cluster.createVm(
      vdi.namespace,
      stoppedVm('labelled', { app: 'desktop', 'corral.dev/vdi-pool': 'elsewhere' }),
    );
    const bare = await createPool(vdi.context, {
      name: 'bare-pool',
      from: 'bare',
      size: 2,
      cloneTimeoutMs: 30_000,
    });
    const labelled = await createPool(vdi.context, {
      name: 'labelled-pool',
      from: 'labelled',
      size: 1,
      cloneTimeoutMs: 30_000,
    });
    expect(bare.members).toEqual(['bare-pool-1', 'bare-pool-2']);
    expect(labelled.members).toEqual(['labelled-pool-1']);

    const member = await vdi.context.cluster.getVm(vdi.namespace, 'bare-pool-1');
    expect(member?.metadata.labels).toEqual({ 'corral.dev/vdi-pool': 'bare-pool' });
    expect(member?.metadata.annotations?.['corral.dev/vdi-source']).toBe('bare');
    expect(member?.spec.runStrategy).toBe('Halted');
    // the golden VM without a label got the one label the restore needs; the labelled one was left as it was
    expect((await vdi.context.cluster.getVm(vdi.namespace, 'bare'))?.metadata.labels).toEqual({
      [goldenLabel]: 'true',
    });
    expect((await vdi.context.cluster.getVm(vdi.namespace, 'labelled'))?.metadata.labels).toEqual({
      app: 'desktop',
      'corral.dev/vdi-pool': 'elsewhere',
    });
    const labelledMember = await vdi.context.cluster.getVm(vdi.namespace, 'labelled-pool-1');
    expect(labelledMember?.metadata.labels).toEqual({
      app: 'desktop',
      'corral.dev/vdi-pool': 'labelled-pool',
    });

    // KubeVirt's restore made each member, with a restore of its own: the two of one create from one snapshot
    expect(labelledMember?.metadata.annotations?.['restore.kubevirt.io/lastRestoreUID']).toBeTruthy();
    expect(managersOf(labelledMember)).toContain('virt-controller');
    const ours = seen.filter((object) => object.namespace === vdi.namespace);
    expect(ours.filter((object) => object.kind === 'VirtualMachineSnapshot')).toHaveLength(2);
    expect(ours.filter((object) => object.kind === 'VirtualMachineRestore')).toHaveLength(3);
  });

  it('runs a claimed member through virt-controller and serves its consoles through virt-api: its VMI, its launcher Pod, the mutator’s defaults', async () => {
    const vdi = await namespaceFor('real-claim');
    await vdi.context.cluster.createVm(vdi.namespace, stoppedVm('golden', { app: 'desktop' }));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, cloneTimeoutMs: 30_000 });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
    const vmi = await waitForRunningVmi(vdi.context.cluster, vdi.namespace, desktop.member);

    // virt-api's mutator defaulted the VM, as KubeVirt does and the simulator did not
    const vm = await vdi.context.cluster.getVm(vdi.namespace, desktop.member);
    expect(vm?.spec.template?.spec?.domain?.machine).toEqual({ type: 'q35' });
    expect(vm?.spec.template?.spec?.architecture).toBe('amd64');
    // virt-controller made the VMI and its launcher Pod; the stand-in of virt-handler only ran it
    expect(managersOf(vmi)).toContain('virt-controller');
    const { items: pods } = await cluster()
      .kubeConfig.makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: vdi.namespace, labelSelector: 'kubevirt.io=virt-launcher' });
    expect(pods).toHaveLength(1);
    expect(pods[0]?.metadata?.name).toMatch(new RegExp(`^virt-launcher-${desktop.member}-`));
    expect(pods[0]?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachineInstance',
      name: desktop.member,
    });
    expect(managersOf(pods[0])).toContain('virt-controller');
    expect(vmi.status?.interfaces?.[0]?.ipAddress).toBe(pods[0]?.status?.podIP);

    // the consoles go through the apiserver to virt-api, which dials the node's handler over mutual TLS
    const vnc = await vdi.context.cluster.openVmiConsole(vdi.namespace, desktop.member, 'vnc', 1 << 22);
    try {
      const rfb = await connectRfb(vnc);
      expect([rfb.width, rfb.height, rfb.name]).toEqual([320, 200, desktop.member]);
    } finally {
      vnc.terminate();
    }
    const serial = await vdi.context.cluster.openVmiConsole(
      vdi.namespace,
      desktop.member,
      'console',
      1 << 22,
    );
    try {
      const read = createByteReader(serial);
      const banner = `\r\n${desktop.member} serial console (echo)\r\n`;
      expect((await read(Buffer.byteLength(banner))).toString()).toBe(banner);
      serial.send(Buffer.from('uptime\r'));
      expect((await read(7)).toString()).toBe('uptime\r');
    } finally {
      serial.terminate();
    }

    // a release stops the member: KubeVirt removes the VMI and its launcher Pod
    await vdi.release({ member: desktop.member, identity: 'alice@example.com' });
    await waitFor(
      async () => ({
        vmi: await vdi.context.cluster.getVmi(vdi.namespace, desktop.member),
        pods: await cluster()
          .kubeConfig.makeApiClient(CoreV1Api)
          .listNamespacedPod({ namespace: vdi.namespace, labelSelector: 'kubevirt.io=virt-launcher' }),
      }),
      {
        describe: `the VMI and launcher Pod of ${desktop.member} to go`,
        until: (found) => found.vmi === undefined && found.pods.items.length === 0,
      },
    );
    const leases = await cluster().kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'coordination.k8s.io',
      version: 'v1',
      namespace: 'kubevirt',
      plural: 'leases',
      name: 'virt-controller',
    });
    expect((leases as { spec: { holderIdentity: string } }).spec.holderIdentity).toBeTruthy();
  });

  it('starts a claimed member only once virt-controller runs again, a fault expressed by stopping the real one', async () => {
    const vdi = await namespaceFor('real-stopped');
    await vdi.context.cluster.createVm(vdi.namespace, stoppedVm('golden', { app: 'desktop' }));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, cloneTimeoutMs: 30_000 });
    const kubevirt = cluster().realKubevirt;
    if (!kubevirt) throw new Error('this file runs on KubeVirt’s own controllers');
    await kubevirt.stopController();
    try {
      const desktop = await vdi.claim({ pool: 'devpool', identity: 'bob@example.com' });
      // the claim wrote the start; nobody turns it into a VMI while the controller is away
      const vm = await vdi.context.cluster.getVm(vdi.namespace, desktop.member);
      expect(vm?.spec.runStrategy).toBe('Always');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(await vdi.context.cluster.getVmi(vdi.namespace, desktop.member)).toBeUndefined();
    } finally {
      await kubevirt.startController();
    }
    await waitForRunningVmi(vdi.context.cluster, vdi.namespace, 'devpool-1');
  });

  it('starts virt-controller again when it gives up leading during a 5 s etcd freeze, as its Deployment would, so a member claimed afterwards runs', async () => {
    const vdi = await namespaceFor('real-freeze');
    await vdi.context.cluster.createVm(vdi.namespace, stoppedVm('golden', { app: 'desktop' }));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, cloneTimeoutMs: 30_000 });
    const kubevirt = cluster().realKubevirt;
    if (!kubevirt) throw new Error('this file runs on KubeVirt’s own controllers');
    // its Lease renewals time out past the 3 s renew deadline, and virt-controller exits on losing the lead
    await cluster().pauseEtcd(5000);
    await waitFor(() => readFileSync(kubevirt.logs.virtController, 'utf8'), {
      describe: 'virt-controller to log that it lost the lead',
      until: (log) => log.includes('leaderelection lost'),
    });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'carol@example.com' });
    await waitForRunningVmi(vdi.context.cluster, vdi.namespace, desktop.member);
  });

  it('makes a pool again right after deleting it, once KubeVirt let its members go', async () => {
    const vdi = await namespaceFor('real-again');
    await vdi.context.cluster.createVm(vdi.namespace, stoppedVm('golden', { app: 'desktop' }));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 2, cloneTimeoutMs: 30_000 });
    await deletePool(vdi.context, { name: 'devpool' });
    // virt-controller keeps a finalizer on every VM: a deleted member is gone only once it removed it
    expect(await vdi.context.cluster.listVms(vdi.namespace, 'corral.dev/vdi-pool=devpool')).toEqual([]);
    const again = await createPool(vdi.context, {
      name: 'devpool',
      from: 'golden',
      size: 2,
      cloneTimeoutMs: 30_000,
    });
    expect(again.members).toEqual(['devpool-1', 'devpool-2']);
  });
});
