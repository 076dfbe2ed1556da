import type { PoolKind, VdiContext } from '../context.js';
import type { DesktopBackend } from '../desktop-backend.js';
import { leasePoolLabel } from '../keys.js';
import type { SharedReads } from '../kube/cluster.js';
import { countPoolMembers, type PoolMemberCounts } from './count-pool-members.js';

/**
 * Reads the member counts of every pool of the namespaces: per namespace the claim Leases, the members of each
 * backend, and the sizes of the pools stored apart from their members (container pools' specs), from this
 * process's watch caches when it runs them and else from the apiserver's. The members of such a kind (Pods, which
 * no cache holds) are listed only in a namespace that stores one of its pools.
 *
 * @throws {@link VdiError} what the adapter throws for a failed list.
 */
export async function readPoolCounts(
  ctx: VdiContext,
  namespaces: readonly string[],
  shared?: SharedReads,
): Promise<PoolMemberCounts[]> {
  const backends = Object.values(ctx.backends).filter((backend): backend is DesktopBackend => !!backend);
  const declaring = Object.values(ctx.poolKinds).filter(
    (kind): kind is PoolKind & Required<Pick<PoolKind, 'readDeclaredSizes'>> =>
      kind?.readDeclaredSizes !== undefined && ctx.backends[kind.kind] !== undefined,
  );
  const read = await Promise.all(
    namespaces.map(async (namespace) => {
      const how = { cached: true, shared };
      const declared = new Map(
        await Promise.all(
          declaring.map(
            async (kind) => [kind.kind, await kind.readDeclaredSizes(ctx, namespace, how)] as const,
          ),
        ),
      );
      const listed = backends.filter((backend) => declared.get(backend.kind)?.size !== 0);
      const [leases, members] = await Promise.all([
        ctx.cluster.listLeases(namespace, leasePoolLabel, how),
        Promise.all(listed.map((backend) => backend.listMembers(namespace, undefined, how))),
      ]);
      const sizes = [...(declared.get('ct') ?? [])].filter(
        (entry): entry is [string, number] => entry[1] !== undefined,
      );
      return countPoolMembers({
        namespace,
        members: members.flat(),
        leases,
        ctSizes: new Map(sizes),
        now: ctx.clock.now(),
      });
    }),
  );
  return read.flat();
}
