import type { VirtualMachine, VirtualMachineClone } from '../../kubevirt-types.js';
import { filterClonedKeys } from './clone-filters.js';
import { type CloneKnobs, simulatorAnnotations } from './fault-knobs.js';
import { applyJsonPatch, parseJsonPatches } from './json-patch.js';

/** The spec fields of a VirtualMachineClone that v1beta1 adds to the SDK's type. */
interface CloneSpecExtras {
  newMacAddresses?: Record<string, string>;
  newSMBiosSerial?: string;
}

/** The annotation KubeVirt's restore puts on the VM it restores into; it tells the clone's own target apart. */
export const lastRestoreAnnotation = 'restore.kubevirt.io/lastRestoreUID';

/** The name of the restore KubeVirt makes for a clone. */
export function restoreNameOf(clone: VirtualMachineClone): string {
  return `tmp-restore-${clone.metadata.uid ?? ''}`;
}

/** The name of the snapshot KubeVirt makes for a clone. */
export function snapshotNameOf(clone: VirtualMachineClone): string {
  return `tmp-snapshot-${clone.metadata.uid ?? ''}`;
}

/** The value of {@link lastRestoreAnnotation} on the target of `clone`. */
export function restoreMarkOf(clone: VirtualMachineClone): string {
  return `${restoreNameOf(clone)}-${clone.metadata.uid ?? ''}`;
}

/** The phases a clone walks through before `Succeeded`. */
export type ClonePhase = 'SnapshotInProgress' | 'RestoreInProgress' | 'CreatingTargetVM';

/** KubeVirt's name for a clone's target when `spec.target` names none; the clone's UID keeps it stable. */
export function defaultTargetName(clone: VirtualMachineClone): string {
  const suffix = (clone.metadata.uid ?? '').replace(/-/g, '').slice(0, 5).toLowerCase();
  return `${clone.spec.source.name}-clone-${suffix}`;
}

/** The target VM's name: `spec.target.name`, else the generated one. */
export function targetNameOf(clone: VirtualMachineClone): string {
  return clone.spec.target?.name || defaultTargetName(clone);
}

/**
 * What KubeVirt's admission webhook would refuse about a clone, or undefined when it is acceptable. The simulator
 * has no webhook, so it fails such a clone instead of rejecting its create.
 */
export function validateClone(
  clone: VirtualMachineClone,
  source: VirtualMachine | undefined,
): string | undefined {
  const { source: ref, target } = clone.spec;
  if (ref?.kind !== 'VirtualMachine')
    return `source kind ${String(ref?.kind)} is not supported; use VirtualMachine`;
  if (target !== undefined && target.kind !== 'VirtualMachine')
    return `target kind ${target.kind} is not supported; use VirtualMachine`;
  if (target?.name && target.name === ref.name) return 'target name cannot be equal to source name';
  if (source === undefined)
    return `VirtualMachine ${ref.name} does not exist in namespace ${clone.metadata.namespace}`;
  return undefined;
}

function withoutSimulatorKnobs(
  annotations: Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (annotations === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(annotations).filter(([key]) => !key.startsWith(simulatorAnnotations.prefix)),
  );
}

function emptyToUndefined(entries: Record<string, string>): Record<string, string> | undefined {
  return Object.keys(entries).length === 0 ? undefined : entries;
}

/**
 * What KubeVirt's restore webhook refuses about a clone's patches, or undefined when it lets them pass. It reads
 * each patch as text split on `,` and then on `:`, wants exactly one `:` in each piece, and a `path` under
 * `/spec/`, `/metadata/labels/` or `/metadata/annotations/`. KubeVirt's clone controller keeps asking for the
 * refused restore, so the clone stays in `RestoreInProgress`.
 */
export function restorePatchRefusal(patches: readonly string[]): string | undefined {
  for (const patch of patches) {
    for (const piece of patch.replace(/^[{}]+|[{}]+$/g, '').split(',')) {
      const parts = piece.split(':');
      if (parts.length !== 2) {
        return `patch format is not valid - one ":" expected in a single key-value json patch: ${piece}`;
      }
      const [key, value] = parts.map((part) => part.trim()) as [string, string];
      if (key !== '"path"') continue;
      if (value.startsWith('"/metadata/labels/') || value.startsWith('"/metadata/annotations/')) continue;
      if (!value.startsWith('"/spec/'))
        return `patching is valid only for elements under /spec/ only: ${piece}`;
    }
  }
  return undefined;
}

/**
 * Builds the VM a clone restores into, as KubeVirt does: a copy of the source VM's spec under the target name;
 * labels and annotations of the VM and of its template kept per the clone's filters (the VM's label map stays,
 * emptied, when the filters remove every label of a source that has some); MAC addresses taken from
 * `newMacAddresses` (or cleared); the firmware UUID cleared and the serial set from `newSMBiosSerial`; then the
 * clone's JSON `patches`. The run strategy is the source's.
 */
export function buildCloneTarget(
  clone: VirtualMachineClone,
  source: VirtualMachine,
):
  | { kind: 'vm'; vm: VirtualMachine }
  | { kind: 'invalid'; message: string }
  | { kind: 'refused'; message: string } {
  const spec = clone.spec as VirtualMachineClone['spec'] & CloneSpecExtras;
  const operations = parseJsonPatches(spec.patches ?? []);
  if (!Array.isArray(operations)) return { kind: 'invalid', message: operations.invalid };
  const refusal = restorePatchRefusal(spec.patches ?? []);
  if (refusal) return { kind: 'refused', message: refusal };
  const vmSpec = structuredClone(source.spec);
  const template = vmSpec.template;
  if (template?.metadata) {
    const labels = emptyToUndefined(filterClonedKeys(template.metadata.labels, spec.template?.labelFilters));
    const annotations = emptyToUndefined(
      filterClonedKeys(template.metadata.annotations, spec.template?.annotationFilters),
    );
    template.metadata = { ...template.metadata, labels, annotations };
    if (labels === undefined) delete template.metadata.labels;
    if (annotations === undefined) delete template.metadata.annotations;
  }
  const domain = template?.spec?.domain;
  const interfaces = domain?.devices?.interfaces;
  if (Array.isArray(interfaces)) {
    for (const iface of interfaces as Array<{ name?: string; macAddress?: string }>) {
      const mac = iface.name === undefined ? undefined : spec.newMacAddresses?.[iface.name];
      if (mac) iface.macAddress = mac;
      else delete iface.macAddress;
    }
  }
  const firmware = domain?.firmware as { uuid?: string; serial?: string } | undefined;
  if (firmware) {
    delete firmware.uuid;
    if (spec.newSMBiosSerial) firmware.serial = spec.newSMBiosSerial;
    else delete firmware.serial;
  }
  // the restore copies every label and the filters remove keys with patches: the map outlives its keys
  const labels =
    Object.keys(source.metadata.labels ?? {}).length > 0
      ? filterClonedKeys(source.metadata.labels, spec.labelFilters)
      : undefined;
  const annotations = {
    ...filterClonedKeys(withoutSimulatorKnobs(source.metadata.annotations), spec.annotationFilters),
    [lastRestoreAnnotation]: restoreMarkOf(clone),
  };
  const target: VirtualMachine = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name: targetNameOf(clone),
      namespace: clone.metadata.namespace ?? '',
      ...(labels ? { labels } : {}),
      annotations,
    },
    spec: vmSpec,
  };
  const patched = applyJsonPatch(target, operations);
  if (patched.kind === 'invalid') return { kind: 'invalid', message: `patch failed: ${patched.message}` };
  return { kind: 'vm', vm: patched.document as VirtualMachine };
}

/** What the clone controller does next for one clone. */
export type CloneStep =
  | { kind: 'fail'; message: string }
  | { kind: 'enter'; phase: ClonePhase | 'Succeeded' }
  | { kind: 'create-target' }
  | { kind: 'finish-restore' }
  | { kind: 'wait'; until: number | undefined }
  /** A finished clone whose target VM is gone: KubeVirt's clone controller deletes it. */
  | { kind: 'delete-clone' }
  | { kind: 'done' };

/** Facts about one clone in progress. */
export interface CloneFacts {
  phase: string;
  knobs: CloneKnobs;
  /** When the clone entered its current phase (milliseconds), as far as this process saw. */
  enteredAt: number;
  now: number;
  /** Whether the target VM is missing, was created by this clone's restore, or is someone else's. */
  target: 'missing' | 'ours' | 'foreign';
  /** The target VM still shows this clone's restore in `status.restoreInProgress`. */
  targetRestoring: boolean;
}

/**
 * Decides a clone's next step: each phase lasts the `phase-delay-ms` knob; the target VM is created during
 * `RestoreInProgress` and released from restoring before `CreatingTargetVM`; a `fail` knob strikes at the end of its
 * phase; `never-finish` holds the clone in `RestoreInProgress`. A `Succeeded` clone whose target VM is gone is
 * deleted, as KubeVirt's clone controller does.
 */
export function planClone(facts: CloneFacts): CloneStep {
  const { phase, knobs } = facts;
  if (phase === 'Succeeded' && facts.target === 'missing') return { kind: 'delete-clone' };
  if (phase === 'Succeeded' || phase === 'Failed') return { kind: 'done' };
  if (phase === '') return { kind: 'enter', phase: 'SnapshotInProgress' };
  if (facts.target === 'foreign' && phase !== 'SnapshotInProgress') {
    return { kind: 'fail', message: 'the target VM already exists and was not created by this clone' };
  }
  if (phase === 'RestoreInProgress' && facts.target === 'missing') return { kind: 'create-target' };
  if (phase === 'RestoreInProgress' && knobs.neverFinish) return { kind: 'wait', until: undefined };
  const due = facts.enteredAt + knobs.phaseDelayMs;
  if (facts.now < due) return { kind: 'wait', until: due };
  if (knobs.fail && knobs.fail.phase === phase) return { kind: 'fail', message: knobs.fail.message };
  switch (phase) {
    case 'SnapshotInProgress':
      return { kind: 'enter', phase: 'RestoreInProgress' };
    case 'RestoreInProgress':
      return facts.targetRestoring
        ? { kind: 'finish-restore' }
        : { kind: 'enter', phase: 'CreatingTargetVM' };
    case 'CreatingTargetVM':
      return facts.target === 'ours'
        ? { kind: 'enter', phase: 'Succeeded' }
        : { kind: 'fail', message: 'the target VM disappeared' };
    default:
      return { kind: 'fail', message: `unknown phase ${phase}` };
  }
}
