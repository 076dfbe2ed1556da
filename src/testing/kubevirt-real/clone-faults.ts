import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachineClone } from '../../kubevirt-types.js';
import { readCloneKnobs } from '../kubevirt/fault-knobs.js';
import { type Informer, startInformer } from '../kubevirt/informer.js';
import { kubevirtResources, mergePatch, unlessNotFound } from '../kubevirt/kube-calls.js';

const snapshots = { group: 'snapshot.kubevirt.io', version: 'v1beta1', plural: 'virtualmachinesnapshots' };

/** A VirtualMachineRestore as the fault webhook reads it. */
export interface RestoreObject {
  metadata?: { namespace?: string; ownerReferences?: { kind?: string; name?: string }[] };
}

/** The clone `fail` and `never-finish` knobs on KubeVirt's own controllers, while they run. */
export interface CloneFaults {
  /**
   * Whether the restore a clone is about to create must be refused, because its clone carries the `fail` knob
   * (its snapshot is then deleted meanwhile) or the `never-finish` knob (refused for as long as it asks).
   */
  refusesRestore(restore: RestoreObject): string | undefined;
  stop(): void;
}

/**
 * Expresses the simulator's clone `fail` knob through KubeVirt's own clone controller. KubeVirt fails a clone
 * whose snapshot went away while it restores (`snapshot … does not exist anymore` in its Ready condition), so once
 * the snapshot of a clone that carries the knob is ready, the fault webhook refuses the clone's restore and its
 * snapshot is deleted (its protecting finalizer lifted), as an administrator or a storage clean-up would; the
 * refusal holds the clone until KubeVirt sees the snapshot gone. A clone restoring from a pool's shared snapshot
 * (which KubeVirt never fails for a missing source: it waits for it) is failed with the knob's message in its status
 * instead, keeping the snapshot for the other clones. Whatever `fail-phase` says, it strikes there; the knob's
 * message is the refusal's.
 */
export async function startCloneFaults(
  kubeConfig: KubeConfig,
  log: (line: string) => void,
): Promise<CloneFaults> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const struck = new Set<string>();
  const deleteSnapshot = async (namespace: string, name: string) => {
    await unlessNotFound(
      api.patchNamespacedCustomObject(
        { ...snapshots, namespace, name, body: { metadata: { finalizers: null } } },
        mergePatch,
      ),
    );
    await unlessNotFound(api.deleteNamespacedCustomObject({ ...snapshots, namespace, name }));
  };
  const failClone = async (clone: VirtualMachineClone, message: string) => {
    const condition = (type: string) => ({ type, status: 'False', reason: 'Failed', message });
    await api.patchNamespacedCustomObjectStatus(
      {
        ...kubevirtResources.clone,
        namespace: clone.metadata.namespace ?? '',
        name: clone.metadata.name ?? '',
        body: { status: { phase: 'Failed', conditions: [condition('Progressing'), condition('Ready')] } },
      },
      mergePatch,
    );
  };
  const clones: Informer<VirtualMachineClone> = await startInformer<VirtualMachineClone>({
    kubeConfig,
    resource: kubevirtResources.clone,
    onChange: () => {},
    log,
  });
  return {
    refusesRestore: (restore) => {
      const namespace = restore.metadata?.namespace ?? '';
      const owner = restore.metadata?.ownerReferences?.find((ref) => ref.kind === 'VirtualMachineClone');
      const clone = owner?.name ? clones.get(`${namespace}/${owner.name}`) : undefined;
      const knobs = clone && readCloneKnobs(clone.metadata.annotations).knobs;
      if (!clone || !knobs) return undefined;
      // KubeVirt asks again and again, so the clone stays in SnapshotInProgress with its snapshot ready
      if (knobs.neverFinish) return 'the never-finish knob holds this clone before its restore';
      const fail = knobs.fail;
      if (!fail) return undefined;
      const snapshot = String(clone.status?.snapshotName ?? '');
      const uid = clone.metadata.uid ?? '';
      // a clone from a snapshot that went away waits for it (KubeVirt's clone controller fails only one that made its
      // own), and the snapshot is its pool's, shared: the knob fails such a clone as KubeVirt's controller writes it
      if (clone.spec.source.kind === 'VirtualMachineSnapshot') {
        if (!struck.has(uid)) {
          struck.add(uid);
          log(`${namespace}/${owner?.name}: the fail knob refuses its restore and fails the clone`);
          failClone(clone, fail.message).catch((error: Error) => {
            struck.delete(uid);
            log(`${namespace}/${owner?.name}: the fail knob could not fail the clone: ${error.message}`);
          });
        }
        return fail.message;
      }
      if (snapshot && !struck.has(uid)) {
        struck.add(uid);
        log(
          `${namespace}/${owner?.name}: the fail knob refuses its restore and deletes snapshot ${snapshot}`,
        );
        deleteSnapshot(namespace, snapshot).catch((error: Error) => {
          // the clone's next restore, refused again, tries once more
          struck.delete(uid);
          log(`${namespace}/${owner?.name}: the fail knob could not delete its snapshot: ${error.message}`);
        });
      }
      return fail.message;
    },
    stop: () => clones.stop(),
  };
}
