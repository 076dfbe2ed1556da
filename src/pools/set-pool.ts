import { z } from 'zod';
import { readGoldenVm, requireCapacity } from '../capacity/capacity-service.js';
import type { VdiContext } from '../context.js';
import { isVdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { defaultPoolActor } from '../pool-options.js';
import { readSpares } from '../spares/keep-spares.js';
import { validateMinReady } from '../spares/min-ready.js';
import { planSpares } from '../spares/plan-spares.js';
import { writeMinReady } from '../spares/spare-writes.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { readPool } from './read-pool.js';
import { runAudited } from './run-audited.js';

/** Options of {@link setPool}. @category pools */
export interface SetPoolOptions {
  name: string;
  namespace?: string;
  /** How many free members the spare keeper keeps running: a whole number from 0 (no spares) to the pool's size. */
  minReady: number;
  /** Who acts, for the audit record. @defaultValue {@link defaultPoolActor} */
  identity?: string;
}

/** What {@link setPool} returns. @category pools */
export interface SetPoolResult {
  /** `vm/<namespace>/<pool>`. */
  id: string;
  minReady: number;
  /** The members that carry the setting now. */
  members: string[];
}

const setSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  minReady: z.unknown(),
  identity: identitySchema.optional(),
});

/**
 * Changes a pool-wide setting of a VM pool: `minReady`, the number of free members the spare keeper keeps
 * running. It is written on every member as the annotation `corral.dev/vdi-min-ready`. Before anything is written
 * the value is checked against the pool's size, and, when the golden VM asks for devices, the spares it would
 * start must fit the cluster's free devices now. The keeper (the broker's loop, or {@link keepPoolSpares}) then
 * starts or stops spares.
 *
 * @example
 * ```ts
 * await setPool(vdi.context, { name: 'devpool', minReady: 2 });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `minReady` is not a whole number from 0 to the pool's size;
 *   `POOL_NOT_FOUND`; `INSUFFICIENT_CAPACITY` when the spares would not fit; nothing is written on any of these.
 * @category pools
 */
export async function setPool(ctx: VdiContext, options: SetPoolOptions): Promise<SetPoolResult> {
  const parsed = parseOptions(setSchema, options, 'setPool');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  return await runAudited(
    ctx,
    { action: 'vdi pool set', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const { pool, vms } = await readPool(ctx, namespace, name);
      const minReady = validateMinReady(parsed.minReady, pool.members.length);
      const read = await readSpares(ctx, namespace, name);
      const plan = planSpares({
        minReady,
        members: read.members,
        leases: read.leases,
        marked: new Set(),
        now: ctx.clock.now(),
      });
      const source = pool.members.find((member) => member.source !== undefined)?.source;
      // a golden VM deleted since leaves the devices unknown: the keeper's starts find out
      const golden =
        plan.start.length > 0 && source !== undefined
          ? await readGoldenVm(ctx, namespace, source).catch((error: unknown) => {
              if (isVdiError(error, 'GOLDEN_NOT_FOUND')) return undefined;
              throw error;
            })
          : undefined;
      if (golden) await requireCapacity(ctx, { golden, size: plan.start.length, namespace });
      await writeMinReady(ctx, vms, minReady);
      return { id, minReady, members: pool.members.map((member) => member.name) };
    },
  );
}
