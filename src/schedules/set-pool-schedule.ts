import { z } from 'zod';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { formatPoolId } from '../ids.js';
import { defaultPoolActor, maxPoolSize } from '../pool-options.js';
import { type PoolSchedule, parsePoolSchedule } from '../pool-schedule.js';
import { writePoolSettings } from '../pools/pool-settings-store.js';
import { readVmPoolFor } from '../pools/read-pool.js';
import { runAudited } from '../pools/run-audited.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';

/** Options of {@link setPoolSchedule}. @category schedules */
export interface SetPoolScheduleOptions {
  name: string;
  namespace?: string;
  /** The schedule as a spec file or flags give it (see {@link parsePoolSchedule}); `null` removes it. */
  schedule: unknown;
  /**
   * The pool's size outside every period.
   * @defaultValue the size already recorded, else the pool's member count now
   */
  plainSize?: number;
  identity?: string;
}

/** What {@link setPoolSchedule} returns. @category schedules */
export interface SetPoolScheduleResult {
  id: string;
  schedule: PoolSchedule | null;
  plainSize: number | null;
}

const setSchema = z.object({
  name: poolNameSchema,
  namespace: namespaceSchema.optional(),
  schedule: z.unknown(),
  plainSize: z.number().optional(),
  identity: identitySchema.optional(),
});

/**
 * Gives a VM pool a schedule, or takes it away (`schedule: null`): periods by weekday and wall-clock time in an IANA
 * time zone, each with the free running members to keep, a floor and a cap on the size, and whether it may scale
 * to zero. Outside every period the pool has its plain size and keeps its `minReady`. The broker's keeper follows
 * it on its next pass (see {@link keepPoolSchedule}). Stored in the pool's settings ConfigMap, one write; a bad
 * schedule is refused before anything is written.
 *
 * @example
 * ```ts
 * await setPoolSchedule(vdi.context, {
 *   name: 'devpool',
 *   schedule: {
 *     timeZone: 'Europe/Berlin',
 *     periods: [{ name: 'peak', days: 'mon-fri', start: '08:00', end: '18:00', buffer: '20%', min: 5, max: 40 }],
 *   },
 *   plainSize: 2,
 * });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` naming the field; `POOL_NOT_FOUND`; `UNSUPPORTED_BACKEND` for a container pool, whose schedule is part of its spec (`applyCtPool`).
 * @category schedules
 */
export async function setPoolSchedule(
  ctx: VdiContext,
  options: SetPoolScheduleOptions,
): Promise<SetPoolScheduleResult> {
  const parsed = parseOptions(setSchema, options, 'setPoolSchedule');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const { name } = parsed;
  const id = formatPoolId({ kind: 'vm', namespace, pool: name });
  const schedule = parsed.schedule === null ? null : parsePoolSchedule(parsed.schedule);
  const { plainSize } = parsed;
  if (
    plainSize !== undefined &&
    (!Number.isSafeInteger(plainSize) || plainSize < 0 || plainSize > maxPoolSize)
  ) {
    throw new VdiError(
      'INVALID_INPUT',
      `The plain size ${plainSize} is no whole number from 0 to ${maxPoolSize}. Nothing was written.`,
      {
        details: { field: 'plainSize' },
      },
    );
  }
  return await runAudited(
    ctx,
    { action: 'vdi pool set', user: parsed.identity ?? defaultPoolActor, target: id },
    async () => {
      const { pool } = await readVmPoolFor(ctx, namespace, name, {
        feature: 'a schedule',
        instead: `a container pool's schedule is part of its spec: apply it with "corral-vdi ct-pool apply -f SPEC --time-zone ZONE --period PERIOD" (docs/ct-pools.md#schedules)`,
      });
      const stored = await writePoolSettings(ctx, namespace, name, (current) => {
        const { schedule: _, plainSize: __, scheduleFailure: ___, ...rest } = current;
        if (schedule === null) return rest;
        return { ...rest, schedule, plainSize: plainSize ?? current.plainSize ?? pool.members.length };
      });
      return { id, schedule: stored.schedule ?? null, plainSize: stored.plainSize ?? null };
    },
  );
}
