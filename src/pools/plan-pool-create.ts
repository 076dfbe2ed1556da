import { memberNameFor } from '../member-names.js';

/**
 * What {@link planPoolCreate} decides: make the members `<pool>-1 … <pool>-<size>`, or refuse with
 * `ALREADY_EXISTS` because the pool has members already (`members`) or other objects hold member names
 * (`taken`). Nothing changes on a refusal.
 *
 * @category pools
 */
export type PoolCreatePlan =
  | { kind: 'create'; members: string[] }
  | {
      kind: 'reject';
      code: 'ALREADY_EXISTS';
      message: string;
      details: { members: string[] } | { taken: string[] };
    };

/**
 * Plans a pool create in `namespace`: its member names, unless the pool exists (`existing` names its members)
 * or some of the names are `taken` by other objects of the namespace.
 *
 * @example
 * ```ts
 * planPoolCreate({ namespace: 'corral-vms', pool: 'devpool', size: 2, existing: [], taken: new Set(['devpool-2']) });
 * // { kind: 'reject', code: 'ALREADY_EXISTS', details: { taken: ['devpool-2'] }, message: '…' }
 * ```
 * @category pools
 */
export function planPoolCreate(input: {
  namespace: string;
  pool: string;
  size: number;
  existing: readonly string[];
  taken: ReadonlySet<string>;
}): PoolCreatePlan {
  const { namespace, pool, size, existing } = input;
  if (existing.length > 0) {
    return {
      kind: 'reject',
      code: 'ALREADY_EXISTS',
      message: `Pool "${pool}" already exists in namespace "${namespace}" (${existing.join(', ')}); resize it, or delete it first.`,
      details: { members: [...existing] },
    };
  }
  const members = Array.from({ length: size }, (_, index) => memberNameFor(pool, index + 1));
  const taken = members.filter((member) => input.taken.has(member));
  if (taken.length === 0) return { kind: 'create', members };
  const one = taken.length === 1;
  return {
    kind: 'reject',
    code: 'ALREADY_EXISTS',
    message: `The member name${one ? '' : 's'} ${taken.join(', ')} ${one ? 'is' : 'are'} already taken by ${one ? 'a VM' : 'VMs'} in namespace "${namespace}"; choose another pool name or remove ${one ? 'that VM' : 'those VMs'}.`,
    details: { taken },
  };
}
