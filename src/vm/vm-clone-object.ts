import { VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import { ephemeralLabel, poolLabel, sourceAnnotation } from '../keys.js';
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
  const plain = `${member}${cloneSuffix}`;
  if (plain.length <= maxSubdomainLength) return plain;
  const hash = shortHash(member);
  const kept = member
    .slice(0, maxSubdomainLength - cloneSuffix.length - hash.length - 1)
    .replace(/[.-]+$/, '');
  return `${kept}-${hash}${cloneSuffix}`;
}

/** What {@link buildMemberClone} makes a clone of. @category pools */
export interface MemberCloneInput {
  namespace: string;
  pool: string;
  member: string;
  /** The golden VM as read from the cluster, with at least one label (see {@link goldenLabel}). */
  golden: VirtualMachine;
  ephemeral: boolean;
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
 * so a pool delete finds leftovers.
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
  if (Object.keys(golden.metadata.labels ?? {}).length === 0) {
    throw new VdiError(
      'INVALID_INPUT',
      `The golden VM "${golden.metadata.name}" has no label, so a clone cannot add the pool label to its copy; label it first.`,
    );
  }
  const marks: Record<string, string> = {
    [poolLabel]: pool,
    ...(ephemeral ? { [ephemeralLabel]: 'true' } : {}),
  };
  const labelOperations = Object.entries(marks).map(([key, value]) =>
    addOperation(`/metadata/labels/${pointerToken(key)}`, value),
  );
  // the restore always annotates its target, so the annotation map exists when the patches run
  const annotationOperations = [
    addOperation(`/metadata/annotations/${pointerToken(sourceAnnotation)}`, golden.metadata.name),
  ];
  const runOperations = [
    addOperation('/spec/runStrategy', 'Halted'),
    ...(golden.spec.running === undefined ? [] : [JSON.stringify({ op: 'remove', path: '/spec/running' })]),
  ];
  const vmRef = (name: string) => ({ apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name });
  return {
    kind: 'VirtualMachineClone',
    metadata: { name: cloneNameFor(member), namespace, labels: { [poolLabel]: pool } },
    spec: {
      source: vmRef(golden.metadata.name ?? ''),
      target: vmRef(member),
      labelFilters: [...cloneKeyFilters],
      annotationFilters: [...cloneKeyFilters],
      template: { labelFilters: [...cloneKeyFilters], annotationFilters: [...cloneKeyFilters] },
      patches: [...labelOperations, ...annotationOperations, ...runOperations],
    },
  };
}
