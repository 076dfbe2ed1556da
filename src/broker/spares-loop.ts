import { isVdiError } from '../errors.js';
import type { KeepRolloutResult } from '../rollouts/keep-rollout.js';
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
  /** Each pass of a pool's roll-out under way. */
  rolledOut: KeepRolloutResult[];
  /** `vm/<namespace>/<pool>` (or the namespace, when its pools could not be listed) of each pass that failed. */
  failed: string[];
}

/**
 * The spare keeper loop of a broker: each pass goes over the VM pools with `minReady` of the served namespaces, over
 * those with a schedule, and then over those with a roll-out under way, one after the other, so a roll-out never
 * races the spare keeper over the same free running members.
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
  /** The leader's fence, which a roll-out checks before each write. */
  fence?: (() => Promise<void>) | undefined;
}): SparesLoop {
  const { vdi, namespaces, intervalMs, log, fence } = options;

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
    try {
      const pass = await vdi.keepRollouts({ namespace, ...(fence ? { fence } : {}) });
      result.rolledOut.push(...pass.kept);
      for (const kept of pass.kept) {
        for (const { member, error } of kept.failed)
          log(
            `broker: rebuilding ${member} for the roll-out of ${kept.id} failed (the next pass finishes it): ${error}`,
          );
      }
      for (const { id, error } of pass.failed) {
        log(`broker: the roll-out pass of ${id} failed (the next pass tries again): ${error}`);
        result.failed.push(id);
      }
    } catch (error) {
      // a replica that lost the Lease stops here; the new leader goes on from the roll-out's journal
      if (isVdiError(error, 'NOT_LEADER')) return;
      log(`broker: listing the roll-outs of ${namespace} failed: ${String(error)}`);
      result.failed.push(namespace);
    }
  }

  return createPeriodicPass(async () => {
    const result: SparesPassResult = { kept: [], scheduled: [], rolledOut: [], failed: [] };
    await Promise.all(namespaces.map((namespace) => keepNamespace(namespace, result)));
    return result;
  }, intervalMs);
}
