import type { VdiContext } from '../context.js';
import { listCtPoolConfigMaps, specOf } from '../ct/ct-pool-store.js';
import type { DesktopBackend } from '../desktop-backend.js';
import { leasePoolLabel } from '../keys.js';
import { countPoolMembers, type PoolMemberCounts } from './count-pool-members.js';

// A ConfigMap edited into an invalid spec has no size to report; its members still count.
function sizeOf(configMap: Parameters<typeof specOf>[0]): [string, number][] {
  try {
    const spec = specOf(configMap);
    return [[spec.name, spec.size]];
  } catch {
    return [];
  }
}

/**
 * Reads the member counts of every pool of the namespaces: per namespace one list of claim Leases, the members of
 * each backend, and the container pools' specs, all from the apiserver's watch cache.
 *
 * @throws {@link VdiError} what the adapter throws for a failed list.
 */
export async function readPoolCounts(
  ctx: VdiContext,
  namespaces: readonly string[],
): Promise<PoolMemberCounts[]> {
  const backends = Object.values(ctx.backends).filter((backend): backend is DesktopBackend => !!backend);
  const read = await Promise.all(
    namespaces.map(async (namespace) => {
      const [leases, members, configMaps] = await Promise.all([
        ctx.cluster.listLeases(namespace, leasePoolLabel, { cached: true }),
        Promise.all(backends.map((backend) => backend.listMembers(namespace, undefined, { cached: true }))),
        ctx.backends.ct ? listCtPoolConfigMaps(ctx, namespace) : [],
      ]);
      return countPoolMembers({
        namespace,
        members: members.flat(),
        leases,
        ctSizes: new Map(configMaps.flatMap(sizeOf)),
        now: ctx.clock.now(),
      });
    }),
  );
  return read.flat();
}
