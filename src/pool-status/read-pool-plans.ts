import type { VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import type { ListOptions, SharedReads } from '../kube/cluster.js';
import { describePoolPlans, type PoolPlans } from './describe-pool-plans.js';

/** One pool's schedule and roll-out, as the broker's pool answers and metrics show them. @category spares */
export interface PlannedPool extends PoolPlans {
  kind: DesktopKind;
  namespace: string;
  pool: string;
}

/**
 * Reads where the schedules and roll-outs of every pool of the namespaces stand: per namespace and pool kind one
 * list of the settings, and only where some pool has a schedule or a roll-out one list of each kind of member
 * object and of the Leases, never a read per pool. With `cached`, from this process's synced watch caches; with
 * `shared`, a list the same request has already asked for is not asked again.
 *
 * @example
 * ```ts
 * for (const planned of await readPoolPlans(vdi.context, ['corral-vms'], { cached: true }))
 *   console.log(planned.pool, planned.schedule?.period ?? 'no period', planned.rollOut?.onTarget);
 * ```
 * @throws {@link VdiError} what the adapter throws for a failed list.
 * @category spares
 */
export async function readPoolPlans(
  ctx: VdiContext,
  namespaces: readonly string[],
  options: Pick<ListOptions, 'cached' | 'shared'> = {},
): Promise<PlannedPool[]> {
  const now = ctx.clock.now();
  const kinds = Object.values(ctx.poolKinds).filter(
    (kind) => kind !== undefined && ctx.backends[kind.kind] !== undefined,
  );
  const read = await Promise.all(
    namespaces.flatMap((namespace) =>
      kinds.map(async (poolKind) => {
        const facts = await poolKind.readPlannedPoolFacts(ctx, namespace, options);
        return [...facts].map(([pool, poolFacts]) => ({
          kind: poolKind.kind,
          namespace,
          pool,
          ...describePoolPlans({ kind: poolKind.kind, pool, facts: poolFacts, now }),
        }));
      }),
    ),
  );
  return read.flat();
}

/** A record of the lists one request asks for, for the reads of that request to share (see `readPoolsWithPlans`). */
export function newSharedReads(): SharedReads {
  return new Map();
}
