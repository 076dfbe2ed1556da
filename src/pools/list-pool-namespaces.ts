import type { VdiContext } from '../context.js';
import type { VdiError } from '../errors.js';
import { poolLabel } from '../keys.js';

/**
 * The namespaces that hold pool members, read with one cluster-wide list of labeled VMs (for `pool list -A`).
 *
 * @throws {@link VdiError} the apiserver's errors, such as `FORBIDDEN` without a cluster-wide `list virtualmachines`.
 */
export async function listPoolNamespaces(ctx: VdiContext): Promise<string[]> {
  const members = await ctx.cluster.listVms(undefined, poolLabel);
  const namespaces = new Set(members.map((vm) => vm.metadata.namespace ?? '').filter((name) => name !== ''));
  return [...namespaces].sort();
}
