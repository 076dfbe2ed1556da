import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { VirtualMachine, VirtualMachineClone } from '../../kubevirt-types.js';
import {
  buildCloneTarget,
  type ClonePhase,
  lastRestoreAnnotation,
  planClone,
  restoreMarkOf,
  restoreNameOf,
  snapshotNameOf,
  targetNameOf,
  validateClone,
} from './clone-plan.js';
import { readCloneKnobs } from './fault-knobs.js';
import type { Informer, ResourceRef } from './informer.js';
import { httpStatusOf, kubevirtResources, splitKey, unlessNotFound, writeStatus } from './kube-calls.js';
import type { NamespaceScope } from './namespace-scope.js';

/** What the clone controller needs. */
export interface CloneControllerOptions {
  kubeConfig: KubeConfig;
  /** `clone.kubevirt.io` in the newest version the simulator serves. */
  cloneResource: ResourceRef;
  clones: Informer<VirtualMachineClone>;
  vms: Informer<VirtualMachine>;
  /** Keys of VMs a clone is still restoring into; the controller adds and removes them. */
  restoring: Set<string>;
  /** Asks the VM controller to look at a VM whose restore state changed. */
  wakeVm: (key: string) => void;
  log: (line: string) => void;
  requeueAfter: (key: string, ms: number) => void;
  /** The knobs of a namespace: its clock, whether it is paused. */
  scopeOf: (namespace: string) => Promise<NamespaceScope>;
}

// A reconcile that needs more steps than this is looping; the next event or wake-up continues it.
const maxStepsPerReconcile = 12;

function condition(
  type: 'Ready' | 'Progressing',
  status: boolean,
  reason: string,
  now: number,
  message?: string,
) {
  return {
    type,
    status: status ? 'True' : 'False',
    reason,
    ...(message ? { message } : {}),

    lastTransitionTime: new Date(now).toISOString(),
  };
}

function statusForPhase(
  clone: VirtualMachineClone,
  phase: ClonePhase | 'Succeeded',
  now: number,
): Record<string, unknown> {
  switch (phase) {
    case 'SnapshotInProgress':
      return {
        phase,
        creationTime: new Date(now).toISOString(),
        snapshotName: snapshotNameOf(clone),
        conditions: [
          condition('Progressing', true, 'Still processing', now),
          condition('Ready', false, 'Still processing', now),
        ],
      };
    case 'RestoreInProgress':
      return { phase, restoreName: restoreNameOf(clone) };
    case 'CreatingTargetVM':
      return { phase, targetName: targetNameOf(clone) };
    case 'Succeeded':
      return {
        phase,
        targetName: targetNameOf(clone),
        snapshotName: null,
        restoreName: null,
        conditions: [condition('Progressing', false, 'Ready', now), condition('Ready', true, 'Ready', now)],
      };
  }
}

/**
 * Creates the reconcile function of the simulated clone controller. It walks a VirtualMachineClone through
 * KubeVirt's phases, creating the target VM during `RestoreInProgress` (held back from starting by
 * `status.restoreInProgress` until the restore ends), as KubeVirt's snapshot-and-restore does.
 */
export function createCloneReconciler(options: CloneControllerOptions): (key: string) => Promise<void> {
  const { kubeConfig, clones, vms, restoring, wakeVm, log } = options;
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  // When this process saw each clone enter its phase; phase delays count from there.
  const entered = new Map<string, { phase: string; at: number }>();
  // The restore each unfinished clone holds on its target, to release it if the clone is deleted.
  const holds = new Map<string, { targetKey: string; restoreName: string }>();
  const reported = new Map<string, string>();

  const setRestoring = (targetKey: string, on: boolean) => {
    if (on) restoring.add(targetKey);
    else if (restoring.delete(targetKey)) wakeVm(targetKey);
  };

  const findVm = async (namespace: string, name: string): Promise<VirtualMachine | undefined> => {
    const cached = vms.get(`${namespace}/${name}`);
    if (cached) return cached;
    // A VM created just before the clone may not have reached the cache yet.
    const found = (await unlessNotFound(
      api.getNamespacedCustomObject({ ...kubevirtResources.vm, namespace, name }),
    )) as VirtualMachine | undefined;
    if (found) vms.remember(found);
    return found;
  };

  const writeCloneStatus = (clone: VirtualMachineClone, status: Record<string, unknown>) =>
    writeStatus(api, clones, options.cloneResource, clone, status);

  // The VM controller writes the new VM's status too, so a conflict here is common: try again on the fresh copy.
  const setRestoreInProgress = async (vm: VirtualMachine, restoreName: string | null) => {
    const key = `${vm.metadata.namespace}/${vm.metadata.name}`;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const current = vms.get(key);
      if (
        !current ||
        (await writeStatus(api, vms, kubevirtResources.vm, current, { restoreInProgress: restoreName }))
      )
        return;
    }
    throw new Error(`could not set status.restoreInProgress of VirtualMachine ${key}: it kept changing`);
  };

  const fail = async (clone: VirtualMachineClone, message: string, now: number) => {
    log(`${clone.metadata.namespace}/${clone.metadata.name}: clone failed: ${message}`);
    await writeCloneStatus(clone, {
      phase: 'Failed',
      conditions: [
        condition('Progressing', false, 'Failed', now, message),
        condition('Ready', false, 'Failed', now, message),
      ],
    });
  };

  // The mark is cleared before the VM controller is woken: it must never see the VM free while the mark stays.
  const release = async (key: string) => {
    const hold = holds.get(key);
    holds.delete(key);
    if (!hold) return;
    const target = vms.get(hold.targetKey);
    // the cache may not show the mark yet; the hold says it was written, so it is cleared either way
    if (target) await setRestoreInProgress(target, null);
    setRestoring(hold.targetKey, false);
  };

  const createTarget = async (clone: VirtualMachineClone, targetKey: string, now: number) => {
    const { namespace = '' } = clone.metadata;
    const source = await findVm(namespace, clone.spec.source.name);
    if (!source)
      return await fail(
        clone,
        `VirtualMachine ${clone.spec.source.name} does not exist in namespace ${namespace}`,
        now,
      );
    const built = buildCloneTarget(clone, source);
    if (built.kind === 'invalid') return await fail(clone, built.message, now);
    if (built.kind === 'refused') {
      log(
        `${namespace}/${clone.metadata.name}: the restore is refused, so the clone waits: ${built.message}`,
      );
      return;
    }
    const restoreName = restoreNameOf(clone);
    setRestoring(targetKey, true);
    holds.set(`${namespace}/${clone.metadata.name}`, { targetKey, restoreName });
    try {
      const created = (await api.createNamespacedCustomObject({
        ...kubevirtResources.vm,
        namespace,
        body: built.vm,
      })) as VirtualMachine;
      vms.remember(created);
      await setRestoreInProgress(created, restoreName);
    } catch (error) {
      if (httpStatusOf(error) !== 409) throw error;
      // Someone else's VM took the name; the next step sees it as foreign and fails the clone.
      setRestoring(targetKey, false);
      await findVm(namespace, targetNameOf(clone));
    }
  };

  return async (key: string) => {
    const scope = await options.scopeOf(splitKey(key).namespace);
    if (scope.paused) return;
    for (let steps = 0; steps < maxStepsPerReconcile; steps += 1) {
      const clone = clones.get(key);
      if (!clone) {
        entered.delete(key);
        reported.delete(key);
        return await release(key);
      }
      const { now } = scope;
      const phase = clone.status?.phase ?? '';
      const { namespace = '' } = clone.metadata;
      const { knobs, problems } = readCloneKnobs(clone.metadata.annotations);
      const problemText = problems.join('; ');
      if (problemText && reported.get(key) !== problemText) log(`${key}: ${problemText}`);
      reported.set(key, problemText);

      if (phase === '') {
        const invalid = validateClone(clone, await findVm(namespace, clone.spec.source?.name ?? ''));
        if (invalid) return await fail(clone, invalid, now);
      }
      const targetKey = `${namespace}/${targetNameOf(clone)}`;
      const target = vms.get(targetKey);
      const ours = target?.metadata.annotations?.[lastRestoreAnnotation] === restoreMarkOf(clone);
      const targetRestoring = ours && target?.status?.restoreInProgress === restoreNameOf(clone);
      if (entered.get(key)?.phase !== phase) entered.set(key, { phase, at: now });
      const step = planClone({
        phase,
        knobs,
        enteredAt: entered.get(key)?.at ?? now,
        now,
        target: !target ? 'missing' : ours ? 'ours' : 'foreign',
        targetRestoring,
      });
      switch (step.kind) {
        case 'done':
          entered.delete(key);
          holds.delete(key);
          return;
        case 'wait':
          // Under a namespace clock only the clock's next move can end a phase; that move wakes the key.
          if (step.until !== undefined && !scope.clocked) options.requeueAfter(key, step.until - now);
          return;
        case 'fail':
          await fail(clone, step.message, now);
          // A half-restored target stays for the caller to inspect or delete, but no longer waits on the restore;
          // its mark goes first, whatever the cache shows, so the VM controller never sees it free and marked.
          if (target && ours) await setRestoreInProgress(target, null);
          if (ours) setRestoring(targetKey, false);
          holds.delete(key);
          break;
        case 'enter':
          await writeCloneStatus(clone, statusForPhase(clone, step.phase, now));
          break;
        case 'create-target':
          await createTarget(clone, targetKey, now);
          break;
        case 'finish-restore':
          if (target) await setRestoreInProgress(target, null);
          setRestoring(targetKey, false);
          holds.delete(key);
          break;
        case 'delete-clone':
          if (!clone.metadata.deletionTimestamp) {
            log(`${key}: the clone's VM ${targetKey} is gone, so the clone goes too`);
            await unlessNotFound(
              api.deleteNamespacedCustomObject({
                ...options.cloneResource,
                namespace,
                name: clone.metadata.name ?? '',
              }),
            );
          }
          return;
      }
    }
    options.requeueAfter(key, 100);
  };
}
