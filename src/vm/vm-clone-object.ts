import { VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import {
  ephemeralLabel,
  poolLabel,
  recreateCloneAnnotation,
  sourceAnnotation,
  stagedForAnnotation,
  stagedPoolLabel,
} from '../keys.js';
import type { VirtualMachine, VirtualMachineClone } from '../kubevirt-types.js';
import { maxSubdomainLength } from '../validate.js';

/**
 * The filters every member clone carries, for the VM and for its template: keep the golden VM's labels and
 * annotations except its own `corral.dev/*` ones (its pool, claim and presentation marks).
 *
 * @category pools
 */
export const cloneKeyFilters: readonly string[] = ['*', '!corral.dev/*'];

const cloneSuffix = '-clone';
const stagedSuffix = '-staged';

/** `name` with `suffix`, shortened with a hash of `name` when that would pass the 253 characters of an object name. */
function suffixedName(name: string, suffix: string): string {
  const plain = `${name}${suffix}`;
  if (plain.length <= maxSubdomainLength) return plain;
  const hash = shortHash(name);
  const kept = name.slice(0, maxSubdomainLength - suffix.length - hash.length - 1).replace(/[.-]+$/, '');
  return `${kept}-${hash}${suffix}`;
}

/**
 * The name of the VirtualMachineClone that makes `member`: `<member>-clone`, shortened with a hash when that
 * would pass the 253 characters an object name may have.
 *
 * @example
 * ```ts
 * cloneNameFor('devpool-1'); // 'devpool-1-clone'
 * ```
 * @category pools
 */
export function cloneNameFor(member: string): string {
  return suffixedName(member, cloneSuffix);
}

/**
 * The name of the VM a recreate of `member` stages its replacement in, beside the member: `<member>-staged`,
 * shortened with a hash as {@link cloneNameFor} does.
 *
 * @example
 * ```ts
 * stagedNameFor('devpool-1'); // 'devpool-1-staged'
 * ```
 * @category pools
 */
export function stagedNameFor(member: string): string {
  return suffixedName(member, stagedSuffix);
}

/** What {@link buildMemberClone} makes a clone of. @category pools */
export interface MemberCloneInput {
  namespace: string;
  pool: string;
  member: string;
  /**
   * The VM to clone, as read from the cluster, with at least one label (see {@link goldenLabel}): the golden VM,
   * or the VM a recreate staged the member in.
   */
  golden: VirtualMachine;
  ephemeral: boolean;
  /** The golden VM the member is made from, for its `corral.dev/vdi-source`. @defaultValue `golden`'s name */
  source?: string | undefined;
  /** Whether a recreate makes the member, which marks the clone object ({@link recreateCloneAnnotation}). */
  recreate?: boolean | undefined;
  /**
   * A ready VirtualMachineSnapshot of `golden` to restore the member from, instead of one the clone takes of
   * `golden` itself: the snapshot a create or grow of several members shares.
   */
  snapshot?: string | undefined;
}

function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function addOperation(path: string, value: unknown): string {
  return JSON.stringify({ op: 'add', path, value });
}

/**
 * The VirtualMachineClone that makes one pool member from the golden VM. It has no `apiVersion`:
 * `KubeCluster.createClone` writes it in the newest `clone.kubevirt.io` version the cluster serves (`v1beta1`, else
 * `v1alpha1`; both carry this spec).
 *
 * The clone copies the golden VM's labels and annotations except `corral.dev/*`, and its `patches` give the
 * target the member's marks and a stopped start: the pool label (plus the ephemeral label when `ephemeral`),
 * the `corral.dev/vdi-source` annotation naming the golden VM (a grown pool and an ephemeral reset clone from
 * it), `spec.runStrategy: Halted`, and no deprecated `spec.running`. The clone object carries the pool label,
 * so a pool delete finds leftovers. With `snapshot`, the clone restores the member from that snapshot of the golden VM
 * rather than snapshotting the golden VM itself.
 *
 * Each patch adds one key, as KubeVirt's restore webhook demands (a path under `/spec/`, `/metadata/labels/` or
 * `/metadata/annotations/`, and no `:` or `,` in a value). A label can only be added into a map that exists: the
 * restore starts the target with all of the golden VM's labels (the filters remove keys, never the map), so the
 * golden VM needs one label at least, which the callers give it ({@link goldenLabel}).
 *
 * @example
 * ```ts
 * const clone = buildMemberClone({ namespace: 'corral-vms', pool: 'devpool', member: 'devpool-1', golden, ephemeral: false });
 * await cluster.createClone('corral-vms', clone);
 * ```
 * @category pools
 */
export function buildMemberClone(input: MemberCloneInput): VirtualMachineClone {
  const { namespace, pool, member, golden, ephemeral } = input;
  const source = input.source ?? golden.metadata.name ?? '';
  const clone = buildClone({
    namespace,
    pool,
    golden,
    target: member,
    labels: { [poolLabel]: pool, ...(ephemeral ? { [ephemeralLabel]: 'true' } : {}) },
    annotations: { [sourceAnnotation]: source },
    snapshot: input.snapshot,
  });
  if (input.recreate)
    clone.metadata.annotations = { ...clone.metadata.annotations, [recreateCloneAnnotation]: 'true' };
  return clone;
}

/**
 * The VirtualMachineClone a recreate of an ephemeral member stages the member's replacement with: the golden VM
 * cloned into {@link stagedNameFor}, stopped, beside the member. The staged VM carries no pool label (so no claim
 * or listing takes it for a member) but `corral.dev/vdi-staged-pool` (a pool delete removes it), and names the
 * member (`corral.dev/vdi-staged-for`) and the golden VM (`corral.dev/vdi-source`). The clone object carries the
 * pool label, as a member's does.
 *
 * @category pools
 */
export function buildStagedClone(input: Omit<MemberCloneInput, 'ephemeral' | 'source'>): VirtualMachineClone {
  const { namespace, pool, member, golden } = input;
  return buildClone({
    namespace,
    pool,
    golden,
    target: stagedNameFor(member),
    labels: { [stagedPoolLabel]: pool },
    annotations: { [sourceAnnotation]: golden.metadata.name ?? '', [stagedForAnnotation]: member },
  });
}

function buildClone(input: {
  namespace: string;
  pool: string;
  golden: VirtualMachine;
  target: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  snapshot?: string | undefined;
}): VirtualMachineClone {
  const { namespace, pool, golden, target, labels, annotations } = input;
  if (Object.keys(golden.metadata.labels ?? {}).length === 0) {
    throw new VdiError(
      'INVALID_INPUT',
      `The golden VM "${golden.metadata.name}" has no label, so a clone cannot add the pool label to its copy; label it first.`,
    );
  }
  const labelOperations = Object.entries(labels).map(([key, value]) =>
    addOperation(`/metadata/labels/${pointerToken(key)}`, value),
  );
  // the restore always annotates its target, so the annotation map exists when the patches run
  const annotationOperations = Object.entries(annotations).map(([key, value]) =>
    addOperation(`/metadata/annotations/${pointerToken(key)}`, value),
  );
  const runOperations = [
    addOperation('/spec/runStrategy', 'Halted'),
    ...(golden.spec.running === undefined ? [] : [JSON.stringify({ op: 'remove', path: '/spec/running' })]),
  ];
  const vmRef = (name: string) => ({ apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name });
  return {
    kind: 'VirtualMachineClone',
    metadata: {
      name: cloneNameFor(target),
      namespace,
      labels: { [poolLabel]: pool },
      // the golden VM, also when the clone's source is a staged VM: a recreate that finds only this clone reads it
      annotations: { [sourceAnnotation]: annotations[sourceAnnotation] ?? '' },
    },
    spec: {
      source:
        input.snapshot === undefined
          ? vmRef(golden.metadata.name ?? '')
          : { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: input.snapshot },
      target: vmRef(target),
      labelFilters: [...cloneKeyFilters],
      annotationFilters: [...cloneKeyFilters],
      template: { labelFilters: [...cloneKeyFilters], annotationFilters: [...cloneKeyFilters] },
      patches: [...labelOperations, ...annotationOperations, ...runOperations],
    },
  };
}
