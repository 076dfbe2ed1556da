import { VdiError } from './errors.js';
import { isValidNamespace, isValidVmName, validatePoolName } from './validate.js';

/** What backs a desktop: a KubeVirt VM or a container. @category ids */
export type DesktopKind = 'vm' | 'ct';

/** The parts of a pool ID `<kind>/<namespace>/<pool>`. @category ids */
export interface PoolRef {
  kind: DesktopKind;
  namespace: string;
  pool: string;
}

/** The parts of a desktop ID `<kind>/<namespace>/<member>`. @category ids */
export interface DesktopRef {
  kind: DesktopKind;
  namespace: string;
  member: string;
}

/**
 * The pool ID `<kind>/<namespace>/<pool>`.
 *
 * @example
 * ```ts
 * formatPoolId({ kind: 'vm', namespace: 'corral-vms', pool: 'devpool' }); // 'vm/corral-vms/devpool'
 * ```
 * @category ids
 */
export function formatPoolId(ref: PoolRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.pool}`;
}

/**
 * The desktop ID `<kind>/<namespace>/<member>`; it stays the same across claims of the member.
 *
 * @example
 * ```ts
 * formatDesktopId({ kind: 'vm', namespace: 'corral-vms', member: 'devpool-1' }); // 'vm/corral-vms/devpool-1'
 * ```
 * @category ids
 */
export function formatDesktopId(ref: DesktopRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.member}`;
}

function splitId(id: string, what: string, example: string): [DesktopKind, string, string] {
  const parts = id.split('/');
  const [kind, namespace, name] = parts;
  if (parts.length !== 3 || (kind !== 'vm' && kind !== 'ct') || !isValidNamespace(namespace ?? '')) {
    throw new VdiError(
      'INVALID_INPUT',
      `"${id}" is not a ${what}; pass <kind>/<namespace>/<name> with kind vm or ct, such as ${example}.`,
      { details: { id } },
    );
  }
  return [kind, namespace as string, name as string];
}

/**
 * Reads a pool ID back into its parts.
 *
 * @example
 * ```ts
 * parsePoolId('vm/corral-vms/devpool'); // { kind: 'vm', namespace: 'corral-vms', pool: 'devpool' }
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the kind, the namespace or the pool name is not valid.
 * @category ids
 */
export function parsePoolId(id: string): PoolRef {
  const [kind, namespace, pool] = splitId(id, 'pool ID', 'vm/corral-vms/devpool');
  validatePoolName(pool);
  return { kind, namespace, pool };
}

/**
 * Reads a desktop ID back into its parts.
 *
 * @example
 * ```ts
 * parseDesktopId('vm/corral-vms/devpool-1'); // { kind: 'vm', namespace: 'corral-vms', member: 'devpool-1' }
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the kind, the namespace or the member name is not valid.
 * @category ids
 */
export function parseDesktopId(id: string): DesktopRef {
  const [kind, namespace, member] = splitId(id, 'desktop ID', 'vm/corral-vms/devpool-1');
  if (!isValidVmName(member)) {
    throw new VdiError(
      'INVALID_INPUT',
      `"${id}" does not end in a member name; pass a desktop ID such as vm/corral-vms/devpool-1.`,
      { details: { id } },
    );
  }
  return { kind, namespace, member };
}
