import { z } from 'zod';
import { poolKindFor, type VdiContext } from '../context.js';
import { defaultDesktopKind } from '../desktop-backend.js';
import { formatPoolId } from '../ids.js';
import { namespaceSchema, parseOptions, poolNameSchema, validateNamespace } from '../validate.js';
import { describePoolPlans } from './describe-pool-plans.js';
import { describePoolStatus, type PoolStatus } from './pool-status.js';

/** Options of {@link readPoolStatus}. @category spares */
export interface PoolStatusOptions {
  name: string;
  namespace?: string;
  /** The pool's kind. @defaultValue `'vm'` */
  kind?: 'vm' | 'ct';
}

const statusSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
});

/**
 * Reads a pool as an operator watches it (see {@link describePoolStatus}): a VM pool from its member VMs, their
 * `minReady` and spare marks and its settings ConfigMap (who it lets in), a container pool from its Pods and its
 * spec; for both the claim Leases and the waiters' Leases.
 *
 * @example
 * ```ts
 * const status = await readPoolStatus(vdi.context, { name: 'devpool' });
 * for (const member of status.members) console.log(member.name, member.holder ?? 'free', member.session);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `POOL_NOT_FOUND` when the pool has no members (a VM pool) or no spec
 *   (a container pool).
 * @category spares
 */
export async function readPoolStatus(ctx: VdiContext, options: PoolStatusOptions): Promise<PoolStatus> {
  const parsed = parseOptions(statusSchema, options, 'readPoolStatus');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const kind = parsed.kind ?? defaultDesktopKind;
  const read = await poolKindFor(ctx, kind).readPoolFacts(ctx, namespace, name);
  const now = ctx.clock.now();
  const plans = describePoolPlans({ kind, pool: name, facts: read, now });
  return describePoolStatus({
    kind,
    namespace,
    pool: name,
    members: read.members,
    leases: read.leases,
    marked: read.marked,
    minReady: read.minReady,
    waiters: plans.waiters,
    now,
    entitlement: {
      poolId: formatPoolId({ kind, namespace, pool: name }),
      allowedGroups: read.settings?.allowedGroups,
      allowedUsers: read.settings?.allowedUsers,
    },
    schedule: plans.schedule,
    rollOut: plans.rollOut,
  });
}
