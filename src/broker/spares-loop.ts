import type { KeepScheduleOutcome } from '../schedules/keep-schedule.js';
import type { KeepSparesResult } from '../spares/keep-spares.js';
import type { Vdi } from '../vdi.js';
import { createPeriodicPass, type PeriodicPass } from './periodic-pass.js';

/** What one pass of a broker's spare keeper did. @category broker */
export interface SparesPassResult {
  /** Each pool's pass that finished. */
  kept: KeepSparesResult[];
  /** Each scheduled pool's pass, or its backoff. */
  scheduled: KeepScheduleOutcome[];
  /** `vm/<namespace>/<pool>` (or the namespace, when its pools could not be listed) of each pass that failed. */
  failed: string[];
}

/**
 * The spare keeper loop of a broker: each pass goes over the VM pools with `minReady` of the served namespaces, and
 * over those with a schedule.
 */
export type SparesLoop = PeriodicPass<SparesPassResult>;

/**
 * Runs `keepSpares` for every served namespace, every `intervalMs`. A pool whose pass fails is logged and tried
 * again on the next pass; the others go on.
 */
export function createSparesLoop(options: {
  vdi: Vdi;
  namespaces: readonly string[];
  intervalMs: number;
  log: (message: string) => void;
}): SparesLoop {
  const { vdi, namespaces, intervalMs, log } = options;

  async function keepNamespace(namespace: string, result: SparesPassResult): Promise<void> {
    try {
      const pass = await vdi.keepSpares({ namespace });
      result.kept.push(...pass.kept);
      for (const { id, error } of pass.failed) {
        log(`broker: keeping the spares of ${id} failed (the next pass tries again): ${error}`);
        result.failed.push(id);
      }
    } catch (error) {
      log(`broker: listing the pools of ${namespace} for spares failed: ${String(error)}`);
      result.failed.push(namespace);
    }
    try {
      const pass = await vdi.keepSchedules({ namespace });
      result.scheduled.push(...pass.kept);
      for (const { id, error } of pass.failed) {
        log(`broker: keeping the schedule of ${id} failed (it backs off, then tries again): ${error}`);
        result.failed.push(id);
      }
    } catch (error) {
      log(`broker: listing the pools of ${namespace} for schedules failed: ${String(error)}`);
      result.failed.push(namespace);
    }
  }

  return createPeriodicPass(async () => {
    const result: SparesPassResult = { kept: [], scheduled: [], failed: [] };
    await Promise.all(namespaces.map((namespace) => keepNamespace(namespace, result)));
    return result;
  }, intervalMs);
}
