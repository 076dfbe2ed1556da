import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachine, VirtualMachineInstance } from '../../kubevirt-types.js';
import { readVmKnobs } from './fault-knobs.js';
import type { Informer } from './informer.js';
import type { IpPool } from './ip-pool.js';
import { httpStatusOf, mergePatch, unlessNotFound } from './kube-calls.js';
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
}

const vmResource = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' } as const;
const vmiResource = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachineinstances' } as const;

// A reconcile that needs more steps than this is looping; the next event or wake-up continues it.
const maxStepsPerReconcile = 12;

function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

function isOwnedBy(vmi: VirtualMachineInstance, name: string): boolean {
  return (
    vmi.metadata.ownerReferences?.some((owner) => owner.kind === 'VirtualMachine' && owner.name === name) ??
    false
  );
}

/**
 * Creates the reconcile function of the simulated VM controller: it turns VMs into VMIs and back, one key at a
 * time, reading from the informers' caches and writing with resourceVersion preconditions.
 */
export function createVmReconciler(options: VmControllerOptions): (key: string) => Promise<void> {
  const { kubeConfig, vms, vmis, ips, log } = options;
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const timers = new Map<string, { startDueAt: number | undefined; stopDueAt: number | undefined }>();
  const reported = new Map<string, string>();

  const refresh = async <T extends VirtualMachine | VirtualMachineInstance>(
    informer: Informer<T>,
    resource: typeof vmResource | typeof vmiResource,
    key: string,
  ) => {
    const found = (await unlessNotFound(api.getNamespacedCustomObject({ ...resource, ...splitKey(key) }))) as
      | T
      | undefined;
    if (found) informer.remember(found);
    else informer.forget(key, undefined);
  };

  const writeStatus = async <T extends VirtualMachine | VirtualMachineInstance>(
    informer: Informer<T>,
    resource: typeof vmResource | typeof vmiResource,
    object: T,
    status: Record<string, unknown>,
  ) => {
    const key = `${object.metadata.namespace}/${object.metadata.name}`;
    try {
      const body = { metadata: { resourceVersion: object.metadata.resourceVersion }, status };
      const written = await api.patchNamespacedCustomObjectStatus(
        { ...resource, ...splitKey(key), body },
        mergePatch,
      );
      informer.remember(written as T);
    } catch (error) {
      // Someone else wrote first (or it is gone): read it again and decide anew.
      if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
      await refresh(informer, resource, key);
    }
  };

  const execute = async (
    key: string,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    step: VmStep,
  ) => {
    const { namespace } = splitKey(key);
    switch (step.kind) {
      case 'create-vmi':
        try {
          const created = await api.createNamespacedCustomObject({
            ...vmiResource,
            namespace,
            body: step.vmi,
          });
          vmis.remember(created as VirtualMachineInstance);
        } catch (error) {
          if (httpStatusOf(error) !== 409) throw error;
          await refresh(vmis, vmiResource, key);
        }
        return;
      case 'delete-vmi':
        try {
          await api.deleteNamespacedCustomObject({
            ...vmiResource,
            ...splitKey(key),
            body: { preconditions: { uid: step.uid } },
          });
          vmis.forget(key, step.uid);
        } catch (error) {
          if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
          await refresh(vmis, vmiResource, key);
        }
        return;
      case 'write-vmi-status':
        if (vmi) await writeStatus(vmis, vmiResource, vmi, step.status);
        return;
      case 'write-vm-status':
        await writeStatus(vms, vmResource, vm, step.status);
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
    if (vmi && isOwnedBy(vmi, splitKey(key).name)) {
      // Without kube-controller-manager no garbage collector follows ownerReferences, so delete the VMI here.
      await execute(key, { metadata: {}, spec: {} }, vmi, {
        kind: 'delete-vmi',
        uid: vmi.metadata.uid ?? '',
      });
    }
  };

  return async (key: string) => {
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
      const now = Date.now();
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
        if (plan.wakeAt !== undefined) options.requeueAfter(key, plan.wakeAt - now);
        return;
      }
      await execute(key, vm, vmi, plan.step);
    }
    options.requeueAfter(key, 100);
  };
}
