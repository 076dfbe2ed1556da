import { z } from 'zod';
import type { VdiContext } from '../context.js';
import { formatPoolId } from '../ids.js';
import { poolLabel } from '../keys.js';
import { readPoolSettingsIn } from '../pools/pool-settings-store.js';
import { namespaceSchema, parseOptions, validateNamespace } from '../validate.js';
import { type KeepScheduleOutcome, keepPoolSchedule } from './keep-schedule.js';

/** What a schedule keeper pass over a namespace did. @category schedules */
export interface KeepSchedulesPassResult {
  /** Each scheduled pool's pass, or its backoff. */
  kept: KeepScheduleOutcome[];
  /** Each pool whose pass failed, with why; its next pass waits out a backoff. */
  failed: Array<{ id: string; error: string }>;
}

const namespaceOnly = z.object({ namespace: namespaceSchema.optional() });

/**
 * One pass of the schedule keeper over every VM pool of a namespace that has a schedule (see
 * {@link keepPoolSchedule}). A pool whose pass fails is reported in `failed`, and the others go on.
 *
 * @throws {@link VdiError} `INVALID_INPUT` for a bad namespace; what listing the pools' settings throws.
 * @category schedules
 */
export async function keepSchedules(
  ctx: VdiContext,
  options: { namespace?: string } = {},
): Promise<KeepSchedulesPassResult> {
  const parsed = parseOptions(namespaceOnly, options, 'keepSchedules');
  const namespace = validateNamespace(parsed.namespace ?? ctx.defaultNamespace);
  const cached = ctx.cluster.isCaching(namespace);
  const [settings, vms] = await Promise.all([
    readPoolSettingsIn(ctx, namespace, { cached }),
    ctx.cluster.listVms(namespace, poolLabel, { cached }),
  ]);
  // a pool is its members: settings of a pool deleted meanwhile are nobody's
  const pools = new Set(vms.map((vm) => vm.metadata.labels?.[poolLabel]));
  const result: KeepSchedulesPassResult = { kept: [], failed: [] };
  for (const [pool, own] of [...settings].sort(([left], [right]) => left.localeCompare(right))) {
    if (!own.schedule || !pools.has(pool)) continue;
    try {
      result.kept.push(await keepPoolSchedule(ctx, { name: pool, namespace, settings: own }));
    } catch (error) {
      result.failed.push({
        id: formatPoolId({ kind: 'vm', namespace, pool }),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return result;
}
