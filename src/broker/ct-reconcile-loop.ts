import { listCtPoolNames } from '../ct/ct-pool-store.js';
import type { ReconcileCtPoolResult } from '../ct-pools/reconcile-ct-pool.js';
import { formatPoolId } from '../ids.js';
import type { Vdi } from '../vdi.js';
import { createPeriodicPass, type PeriodicPass } from './periodic-pass.js';

/** What one pass of a broker's container-pool reconcile loop did. @category broker */
export interface CtReconcilePassResult {
  /** Each pool's pass that finished. */
  reconciled: ReconcileCtPoolResult[];
  /** `ct/<namespace>/<pool>` (or the namespace, when its pools could not be listed) of each pass that failed. */
  failed: string[];
}

/** The reconcile loop of a broker's container pools: each pass goes over every container pool served. */
export type CtReconcileLoop = PeriodicPass<CtReconcilePassResult>;

/** Options of {@link createCtReconcileLoop}. */
export interface CtReconcileLoopOptions {
  vdi: Vdi;
  namespaces: readonly string[];
  intervalMs: number;
  log: (message: string) => void;
}

/**
 * Runs `reconcileCtPool` for every container pool of the served namespaces, every `intervalMs`. A pool whose
 * pass fails is logged and tried again on the next pass; the others go on.
 */
export function createCtReconcileLoop(options: CtReconcileLoopOptions): CtReconcileLoop {
  const { vdi, namespaces, intervalMs, log } = options;

  async function reconcileNamespace(namespace: string, result: CtReconcilePassResult): Promise<void> {
    let pools: string[];
    try {
      // with the broker's caches synced this asks nothing, so a namespace without container pools costs nothing
      pools = await listCtPoolNames(vdi.context, namespace);
    } catch (error) {
      log(`broker: listing the container pools of ${namespace} failed: ${String(error)}`);
      result.failed.push(namespace);
      return;
    }
    for (const pool of pools) {
      try {
        result.reconciled.push(await vdi.reconcileCtPool({ name: pool, namespace }));
      } catch (error) {
        const id = formatPoolId({ kind: 'ct', namespace, pool });
        log(`broker: reconciling ${id} failed (the next pass tries again): ${String(error)}`);
        result.failed.push(id);
      }
    }
  }

  return createPeriodicPass(async () => {
    const result: CtReconcilePassResult = { reconciled: [], failed: [] };
    await Promise.all(namespaces.map((namespace) => reconcileNamespace(namespace, result)));
    return result;
  }, intervalMs);
}
