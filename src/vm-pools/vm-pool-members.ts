import { readGoldenVm, requireCapacity } from '../capacity/capacity-service.js';
import type { VdiContext } from '../context.js';
import { poolLabel, stagedPoolLabel } from '../keys.js';
import { cloneKind, snapshotKind } from '../kube/resource-kinds.js';
import type { PoolMemberFactory } from '../pools/pool-member-factory.js';
import { deletePoolSnapshot, listPoolSnapshots } from '../vm/vm-pool-snapshot.js';
import { waitUntilVmGone } from '../vm/wait-until-vm-gone.js';
import { cloneMembers } from './clone-vm-members.js';
import { memberDeleteTimeoutMs, removeMembers } from './remove-vm-members.js';

/** How long a deleted member may stay while KubeVirt removes its finalizer (its instance going down first). */

/**
 * The VM {@link PoolMemberFactory}: members are cloned from a golden VM through VirtualMachineClone, admitted
 * by the devices the golden VM asks for, and removed by deleting their clone objects and VMs.
 *
 * @example
 * ```ts
 * const factory = createVmMemberFactory(vdi.context);
 * const golden = await factory.readSource('corral-vms', 'golden-desktop');
 * await golden.admit({ size: 3 });
 * ```
 * @category pools
 */
export function createVmMemberFactory(ctx: VdiContext): PoolMemberFactory {
  const { cluster } = ctx;
  return {
    kind: 'vm',

    async readSource(namespace, name) {
      const golden = await readGoldenVm(ctx, namespace, name);
      // members are made through KubeVirt's clone API: a cluster without it is told before any change
      await cluster.cloneApiVersion();
      return {
        name,
        admit: ({ size, members }) =>
          requireCapacity(ctx, { golden, size, namespace, ...(members ? { members } : {}) }),
        makeMembers: (input) => cloneMembers(ctx, { ...input, golden }),
      };
    },

    async listTakenNames(namespace) {
      return new Set((await cluster.listVms(namespace)).map((vm) => vm.metadata.name ?? ''));
    },

    async listPending(namespace, pool) {
      const [clones, staged, snapshots] = await Promise.all([
        cluster.resource(cloneKind).in(namespace).list(`${poolLabel}=${pool}`),
        // the replacements of members a recreate staged and did not remove (it stopped part-way)
        cluster.listVms(namespace, `${stagedPoolLabel}=${pool}`),
        // the golden VM's snapshot a create or grow that stopped part-way left
        listPoolSnapshots(ctx, namespace, pool),
      ]);
      return [...[...clones, ...staged].map((object) => object.metadata.name ?? ''), ...snapshots];
    },

    async deletePending(namespace, name) {
      if (await cluster.resource(cloneKind).in(namespace).delete(name, { preconditions: {} })) return;
      // a snapshot's name never ends in -clone, nor is it a VM's: deleting it by name deletes nothing else
      const snapshot = await cluster
        .resource(snapshotKind)
        .in(namespace)
        .get(name)
        .catch(() => undefined);
      if (snapshot?.metadata.labels?.[poolLabel] !== undefined) {
        await deletePoolSnapshot(ctx, namespace, name);
        return;
      }
      const staged = await cluster.getVm(namespace, name);
      // only a staged VM: a member is deleted under its removal Lease, never here
      if (staged?.metadata.labels?.[stagedPoolLabel] && !staged.metadata.labels[poolLabel]) {
        await cluster.deleteVm(namespace, name, { uid: staged.metadata.uid ?? '' });
      }
    },

    async deleteMember({ namespace, member, uid }) {
      await cluster.deleteVm(namespace, member, { uid });
      // a new member of that name, or a pool made again, must not meet the old VM while KubeVirt lets it go
      await waitUntilVmGone(ctx, {
        namespace,
        member,
        uid,
        timeoutMs: memberDeleteTimeoutMs,
        timeoutCode: 'WAIT_TIMED_OUT',
        untilKubevirtLetsGo: true,
      });
    },

    removeMade: (input) => removeMembers(ctx, input),
  };
}
