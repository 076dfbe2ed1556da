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
 * Reads the member counts of every pool of the namespaces: per namespace the claim Leases, the members of each
 * backend, and the container pools' specs, from this process's watch caches when it runs them and else from the
 * apiserver's. Container members (Pods, which no cache holds) are listed only in a namespace with container pools.
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
      const how = { cached: true };
      const configMaps = ctx.backends.ct ? await listCtPoolConfigMaps(ctx, namespace, how) : [];
      const listed = backends.filter((backend) => backend.kind !== 'ct' || configMaps.length > 0);
      const [leases, members] = await Promise.all([
        ctx.cluster.listLeases(namespace, leasePoolLabel, how),
        Promise.all(listed.map((backend) => backend.listMembers(namespace, undefined, how))),
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
