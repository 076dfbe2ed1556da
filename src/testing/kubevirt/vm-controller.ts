import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import { readVmKnobs } from './fault-knobs.js';
import type { Informer } from './informer.js';
import type { IpPool } from './ip-pool.js';
import { httpStatusOf, kubevirtResources, splitKey, unlessNotFound, writeStatus } from './kube-calls.js';
import type { NamespaceScope } from './namespace-scope.js';
import { planVm, type VmStep } from './vm-plan.js';

/** What the VM controller needs. */
export interface VmControllerOptions {
  kubeConfig: KubeConfig;
  vms: Informer<VirtualMachine>;
  vmis: Informer<VirtualMachineInstance>;
  ips: IpPool;
  defaultNodeName: string;
  /** Keys of VMs a clone is still restoring into. */
  restoring: ReadonlySet<string>;
  log: (line: string) => void;
  /** Asks for another look at `key` after `ms` milliseconds. */
  requeueAfter: (key: string, ms: number) => void;
  /** The knobs of a namespace: its clock, whether it is paused. */
  scopeOf: (namespace: string) => Promise<NamespaceScope>;
}

// A reconcile that needs more steps than this is looping; the next event or wake-up continues it.
const maxStepsPerReconcile = 12;

function isOwnedBy(vmi: VirtualMachineInstance, name: string): boolean {
  return (
    vmi.metadata.ownerReferences?.some((owner) => owner.kind === 'VirtualMachine' && owner.name === name) ??
    false
  );
}

/**
 * Creates the reconcile function of the simulated VM controller: it turns VMs into VMIs and back, one key at a
 * time, reading from the informers' caches and writing with resourceVersion or UID preconditions.
 */
export function createVmReconciler(options: VmControllerOptions): (key: string) => Promise<void> {
  const { kubeConfig, vms, vmis, ips, log } = options;
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const timers = new Map<string, { startDueAt: number | undefined; stopDueAt: number | undefined }>();
  const reported = new Map<string, string>();

  // The cache was behind (a create or delete met a different object): read the VMI again and decide anew.
  const refreshVmi = async (key: string) => {
    const found = await unlessNotFound(
      api.getNamespacedCustomObject({ ...kubevirtResources.vmi, ...splitKey(key) }),
    );
    if (found) vmis.remember(found as VirtualMachineInstance);
    else vmis.forget(key, undefined);
  };

  const deleteVmi = async (key: string, uid: string) => {
    try {
      const body = { preconditions: { uid } };
      await api.deleteNamespacedCustomObject({ ...kubevirtResources.vmi, ...splitKey(key), body });
      vmis.forget(key, uid);
    } catch (error) {
      if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
      await refreshVmi(key);
    }
  };

  const execute = async (
    key: string,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    step: VmStep,
  ) => {
    switch (step.kind) {
      case 'create-vmi':
        try {
          const body = step.vmi;
          const created = await api.createNamespacedCustomObject({
            ...kubevirtResources.vmi,
            namespace: splitKey(key).namespace,
            body,
          });
          vmis.remember(created as VirtualMachineInstance);
        } catch (error) {
          if (httpStatusOf(error) !== 409) throw error;
          await refreshVmi(key);
        }
        return;
      case 'delete-vmi':
        return await deleteVmi(key, step.uid);
      case 'write-vmi-status':
        if (vmi) await writeStatus(api, vmis, kubevirtResources.vmi, vmi, step.status);
        return;
      case 'write-vm-status':
        await writeStatus(api, vms, kubevirtResources.vm, vm, step.status);
        return;
      case 'none':
        return;
    }
  };

  const cleanUpDeleted = async (key: string) => {
    timers.delete(key);
    reported.delete(key);
    ips.release(key);
    const vmi = vmis.get(key);
    // Without kube-controller-manager no garbage collector follows ownerReferences, so delete the VMI here.
    if (vmi && isOwnedBy(vmi, splitKey(key).name)) await deleteVmi(key, vmi.metadata.uid ?? '');
  };

  return async (key: string) => {
    const scope = await options.scopeOf(splitKey(key).namespace);
    if (scope.paused) return;
    for (let steps = 0; steps < maxStepsPerReconcile; steps += 1) {
      const vm = vms.get(key);
      if (!vm) return await cleanUpDeleted(key);
      const vmi = vmis.get(key);
      const { knobs, problems } = readVmKnobs(vm.metadata.annotations);
      const ipAddress = knobs.ipAddress ?? ips.addressOf(key);
      if (ipAddress === undefined)
        problems.push("the simulator's IP range is exhausted, so its VMI stays Scheduled");
      const problemText = problems.join('; ');
      if (problemText && reported.get(key) !== problemText) log(`${key}: ${problemText}`);
      reported.set(key, problemText);
      const { now } = scope;
      const kept = timers.get(key);
      const plan = planVm({
        vm,
        vmi,
        knobs,
        restoring: options.restoring.has(key) || typeof vm.status?.restoreInProgress === 'string',
        nodeName: knobs.nodeName ?? options.defaultNodeName,
        ipAddress,
        now,
        startDueAt: kept?.startDueAt,
        stopDueAt: kept?.stopDueAt,
      });
      if (plan.startDueAt === undefined && plan.stopDueAt === undefined) timers.delete(key);
      else timers.set(key, { startDueAt: plan.startDueAt, stopDueAt: plan.stopDueAt });
      if (plan.step.kind === 'none') {
        // Under a namespace clock only the clock's next move can make a delay pass; that move wakes the key.
        if (plan.wakeAt !== undefined && !scope.clocked) options.requeueAfter(key, plan.wakeAt - now);
        return;
      }
      await execute(key, vm, vmi, plan.step);
    }
    options.requeueAfter(key, 100);
  };
}
