import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachineClone } from '../../kubevirt-types.js';
import { readCloneKnobs } from '../kubevirt/fault-knobs.js';
import { startInformer } from '../kubevirt/informer.js';
import { kubevirtResources, mergePatch, splitKey, unlessNotFound } from '../kubevirt/kube-calls.js';

const snapshots = { group: 'snapshot.kubevirt.io', version: 'v1beta1', plural: 'virtualmachinesnapshots' };

/** The clone faults on KubeVirt's own controllers, while they run. */
export interface CloneFaults {
  stop(): void;
}

/**
 * Expresses the simulator's clone `fail` knob through KubeVirt's own clone controller: once a clone that carries it
 * has made its snapshot, the snapshot is deleted (its protecting finalizer lifted), as an administrator or a
 * storage clean-up would; KubeVirt then fails the clone with `snapshot … does not exist anymore` in its Ready
 * condition. It strikes once the snapshot exists, or with `fail-phase` `RestoreInProgress` (or `CreatingTargetVM`,
 * which KubeVirt gives no way to fail) once the restore runs; the knob's message is only logged.
 */
export async function startCloneFaults(
  kubeConfig: KubeConfig,
  log: (line: string) => void,
): Promise<CloneFaults> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const struck = new Set<string>();
  const strike = async (key: string, clone: VirtualMachineClone) => {
    const { namespace } = splitKey(key);
    const name = String(clone.status?.snapshotName ?? '');
    if (!name) return;
    log(
      `${key}: the fail knob deletes its snapshot ${name} (${readCloneKnobs(clone.metadata.annotations).knobs.fail?.message})`,
    );
    await unlessNotFound(
      api.patchNamespacedCustomObject(
        { ...snapshots, namespace, name, body: { metadata: { finalizers: null } } },
        mergePatch,
      ),
    );
    await unlessNotFound(api.deleteNamespacedCustomObject({ ...snapshots, namespace, name }));
  };
  const informer = await startInformer<VirtualMachineClone>({
    kubeConfig,
    resource: kubevirtResources.clone,
    onChange: (key, clone) => {
      const fail = clone && readCloneKnobs(clone.metadata.annotations).knobs.fail;
      const phase = clone?.status?.phase;
      if (!clone || !fail || struck.has(clone.metadata.uid ?? key)) return;
      const strikesIn =
        fail.phase === 'SnapshotInProgress'
          ? ['SnapshotInProgress', 'RestoreInProgress']
          : ['RestoreInProgress'];
      if (!strikesIn.includes(phase ?? '') || !clone.status?.snapshotName) return;
      struck.add(clone.metadata.uid ?? key);
      strike(key, clone).catch((error: Error) =>
        log(`${key}: the fail knob could not strike: ${error.message}`),
      );
    },
    log,
  });
  return { stop: () => informer.stop() };
}
