import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { isVdiError, type VdiError } from '../../../src/errors.js';
import type { VdiEvents } from '../../../src/events.js';
import { poolLabel } from '../../../src/keys.js';
import { snapshotKind } from '../../../src/kube/resource-kinds.js';
import { createPool, deletePool, resizePool } from '../../../src/pools/pool-service.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { buildPoolSnapshot } from '../../../src/vm/vm-pool-snapshot.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { bindDocumentedRole } from '../rbac/documented-role.js';

const cluster = useSharedCluster();
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

interface Seen {
  kind: string;
  type: string;
  name: string;
  source: string | undefined;
  /** The order in which the watch saw it, across snapshots and restores. */
  at: number;
}

/** Every VirtualMachineSnapshot and VirtualMachineRestore written in `namespace`, as KubeVirt's controllers make and remove them. */
async function watchSnapshotsAndRestores(namespace: string): Promise<Seen[]> {
  const seen: Seen[] = [];
  const watch = new Watch(cluster().kubeConfig);
  type Watched = {
    kind: string;
    metadata: { name: string };
    spec?: { source?: { name?: string }; virtualMachineSnapshotName?: string };
  };
  const api = cluster().kubeConfig.makeApiClient(CustomObjectsApi);
  for (const plural of ['virtualmachinesnapshots', 'virtualmachinerestores']) {
    // from the version of a list, so that nothing written once this returns goes unseen
    const listed = (await api.listNamespacedCustomObject({
      group: 'snapshot.kubevirt.io',
      version: 'v1beta1',
      namespace,
      plural,
    })) as { metadata?: { resourceVersion?: string } };
    const request = await watch.watch(
      `/apis/snapshot.kubevirt.io/v1beta1/namespaces/${namespace}/${plural}`,
      { resourceVersion: listed.metadata?.resourceVersion },
      (type, object: Watched) =>
        seen.push({
          kind: object.kind,
          type,
          name: object.metadata.name,
          source: object.spec?.source?.name,
          at: seen.length,
        }),
      () => undefined,
    );
    cleanups.push(() => request.abort());
  }
  return seen;
}

/** The most restores that existed at one time, from the order the watch saw them added and deleted. */
function mostRestoresAtOnce(seen: Seen[]): number {
  let now = 0;
  let most = 0;
  for (const event of seen.filter((each) => each.kind === 'VirtualMachineRestore')) {
    if (event.type === 'ADDED') now += 1;
    if (event.type === 'DELETED') now -= 1;
    most = Math.max(most, now);
  }
  return most;
}

/** Waits until the namespace has no VirtualMachineSnapshot: a deleted one stays until KubeVirt lifts its finalizer. */
async function snapshotsGone(vdi: Vdi, namespace: string): Promise<void> {
  await waitFor(() => vdi.context.cluster.resource(snapshotKind).in(namespace).list(), {
    describe: `the VirtualMachineSnapshots of ${namespace} to be gone`,
    until: (snapshots) => snapshots.length === 0,
  });
}

async function namespaceWithGolden(prefix: string): Promise<{ vdi: Vdi; namespace: string }> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
  await vdi.context.cluster.createVm(namespace, stoppedVm('golden', { app: 'desktop' }));
  return { vdi, namespace };
}

describe('a pool create or grow of several members snapshots the golden VM once', () => {
  it('makes a pool of 6 from one snapshot of the golden VM, restores the members side by side, and deletes the snapshot', async () => {
    const { vdi, namespace } = await namespaceWithGolden('shared-snapshot');
    const seen = await watchSnapshotsAndRestores(namespace);
    const snapshotEvents: Array<VdiEvents['pool-snapshot'][0]> = [];
    vdi.events.on('pool-snapshot', (event) => snapshotEvents.push(event));

    const created = await createPool(vdi.context, {
      name: 'six',
      from: 'golden',
      size: 6,
      cloneTimeoutMs: 60_000,
    });
    expect(created.members).toHaveLength(6);

    // KubeVirt took one snapshot of the golden VM, not one per member's clone
    const snapshotsMade = seen.filter(
      (each) => each.kind === 'VirtualMachineSnapshot' && each.type === 'ADDED',
    );
    expect(snapshotsMade.map((each) => each.source)).toEqual(['golden']);
    const restoresMade = seen.filter(
      (each) => each.kind === 'VirtualMachineRestore' && each.type === 'ADDED',
    );
    expect(restoresMade).toHaveLength(6);
    // each restore read the one snapshot, and more than one ran at a time
    expect(mostRestoresAtOnce(seen)).toBeGreaterThan(1);
    const snapshot = snapshotsMade[0]?.name ?? '';
    expect(snapshot).toMatch(/^six-snapshot-[0-9a-f]{8}$/);
    expect(snapshotEvents.map((event) => event.step)).toEqual(['taking', 'ready', 'deleted']);
    // the snapshot was deleted: KubeVirt lifts its finalizer once its content is gone
    await snapshotsGone(vdi, namespace);
    for (const member of created.members) {
      const vm = await vdi.context.cluster.getVm(namespace, member);
      expect(vm?.metadata.labels?.[poolLabel]).toBe('six');
      expect(vm?.spec.runStrategy).toBe('Halted');
    }
  });

  it('grows twice at once, each grow from a snapshot of its own, and neither trips over the other', async () => {
    const { vdi, namespace } = await namespaceWithGolden('shared-snapshot-grow');
    await createPool(vdi.context, { name: 'grown', from: 'golden', size: 1, cloneTimeoutMs: 60_000 });
    const seen = await watchSnapshotsAndRestores(namespace);
    const grows = await Promise.allSettled([
      resizePool(vdi.context, { name: 'grown', size: 4, cloneTimeoutMs: 60_000 }),
      resizePool(vdi.context, { name: 'grown', size: 4, cloneTimeoutMs: 60_000 }),
    ]);
    // both plan the same names: a grow that met the other's members gives up on a retryable `taken`, never on a snapshot
    for (const grow of grows) {
      if (grow.status === 'fulfilled') continue;
      expect(isVdiError(grow.reason, 'CLONE_FAILED'), String(grow.reason)).toBe(true);
      expect((grow.reason as VdiError).retryable).toBe(true);
      expect((grow.reason as VdiError).message).toContain('taken');
    }
    const snapshotsMade = seen.filter(
      (each) => each.kind === 'VirtualMachineSnapshot' && each.type === 'ADDED',
    );
    // one each, unless a grow read the pool only once the other had made it whole
    expect(snapshotsMade.length).toBeGreaterThanOrEqual(1);
    expect(snapshotsMade.length).toBeLessThanOrEqual(2);
    expect(new Set(snapshotsMade.map((each) => each.name)).size).toBe(snapshotsMade.length);
    await snapshotsGone(vdi, namespace);
    // as the retryable error asks: read the pool again and resize again
    await resizePool(vdi.context, { name: 'grown', size: 4, cloneTimeoutMs: 60_000 });
    const members = (await vdi.context.cluster.listVms(namespace, `${poolLabel}=grown`)).map(
      (vm) => vm.metadata.name,
    );
    expect(members.sort()).toEqual(['grown-1', 'grown-2', 'grown-3', 'grown-4']);
    await snapshotsGone(vdi, namespace);
  });

  it('leaves a snapshot a stopped create left to the next create, and pool delete removes it', async () => {
    const { vdi, namespace } = await namespaceWithGolden('shared-snapshot-left');
    await createPool(vdi.context, { name: 'left', from: 'golden', size: 2, cloneTimeoutMs: 60_000 });
    // as a create killed between taking its snapshot and deleting it leaves it
    const golden = await vdi.context.cluster.getVm(namespace, 'golden');
    const left = buildPoolSnapshot({ namespace, pool: 'left', golden: golden ?? stoppedVm('golden') });
    await vdi.context.cluster.resource(snapshotKind).in(namespace).create(left);

    const grown = await resizePool(vdi.context, { name: 'left', size: 4, cloneTimeoutMs: 60_000 });
    expect(grown.added).toEqual(['left-3', 'left-4']);
    const snapshots = await vdi.context.cluster
      .resource(snapshotKind)
      .in(namespace)
      .list(`${poolLabel}=left`);
    // the grow's own one is deleted (KubeVirt may still be lifting its finalizer); the one left stays
    const standing = snapshots.filter((snapshot) => snapshot.metadata.deletionTimestamp === undefined);
    expect(standing.map((snapshot) => snapshot.metadata.name)).toEqual([left.metadata.name]);

    await deletePool(vdi.context, { name: 'left' });
    await snapshotsGone(vdi, namespace);
  });

  it('falls back to one clone per member from the VM for an identity that may not create snapshots, and says why', async () => {
    const { vdi: admin, namespace } = await namespaceWithGolden('shared-snapshot-rbac');
    const { kubeConfig, unbind } = await bindDocumentedRole(cluster(), {
      namespace,
      user: 'pool-maker',
      missing: {
        scope: 'namespace',
        group: 'snapshot.kubevirt.io',
        resource: 'virtualmachinesnapshots',
        verb: 'create',
      },
    });
    cleanups.push(unbind);
    const user = createVdi({ kubeConfig, namespace });
    const seen = await watchSnapshotsAndRestores(namespace);
    const snapshotEvents: Array<VdiEvents['pool-snapshot'][0]> = [];
    user.events.on('pool-snapshot', (event) => snapshotEvents.push(event));

    const created = await createPool(user.context, {
      name: 'slow',
      from: 'golden',
      size: 3,
      cloneTimeoutMs: 60_000,
    });
    expect(created.members).toEqual(['slow-1', 'slow-2', 'slow-3']);
    expect(snapshotEvents.map((event) => event.step)).toEqual(['taking', 'skipped']);
    expect(snapshotEvents[1]?.reason).toContain('may not create, get and delete virtualmachinesnapshots');
    expect(snapshotEvents[1]?.reason).toContain('one after another');
    // each clone snapshotted the golden VM itself
    const snapshotsMade = seen.filter(
      (each) => each.kind === 'VirtualMachineSnapshot' && each.type === 'ADDED',
    );
    expect(snapshotsMade.map((each) => each.name).every((name) => name.startsWith('tmp-snapshot-'))).toBe(
      true,
    );
    expect(snapshotsMade).toHaveLength(3);
    expect(await admin.context.cluster.listVms(namespace, `${poolLabel}=slow`)).toHaveLength(3);
  });
});
