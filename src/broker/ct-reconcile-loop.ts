import type { ReconcileCtPoolResult } from '../ct/reconcile-ct-pool.js';
import type { Vdi } from '../vdi.js';

/** What one pass of a broker's container-pool reconcile loop did. @category broker */
export interface CtReconcilePassResult {
  /** Each pool's pass that finished. */
  reconciled: ReconcileCtPoolResult[];
  /** `ct/<namespace>/<pool>` (or the namespace, when its pools could not be listed) of each pass that failed. */
  failed: string[];
}

/** The reconcile loop of a broker's container pools. */
export interface CtReconcileLoop {
  /** One reconcile pass of every container pool of the served namespaces; a running pass is joined. */
  runPass(): Promise<CtReconcilePassResult>;
  start(): void;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

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
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<CtReconcilePassResult> | undefined;

  async function reconcileNamespace(namespace: string, result: CtReconcilePassResult): Promise<void> {
    let pools: Awaited<ReturnType<Vdi['listCtPools']>>;
    try {
      pools = await vdi.listCtPools({ namespace });
    } catch (error) {
      log(`broker: listing the container pools of ${namespace} failed: ${String(error)}`);
      result.failed.push(namespace);
      return;
    }
    for (const pool of pools) {
      try {
        result.reconciled.push(await vdi.reconcileCtPool({ name: pool.name, namespace }));
      } catch (error) {
        log(`broker: reconciling ${pool.id} failed (the next pass tries again): ${String(error)}`);
        result.failed.push(pool.id);
      }
    }
  }

  async function pass(): Promise<CtReconcilePassResult> {
    const result: CtReconcilePassResult = { reconciled: [], failed: [] };
    await Promise.all(namespaces.map((namespace) => reconcileNamespace(namespace, result)));
    return result;
  }

  function runPass(): Promise<CtReconcilePassResult> {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    runPass,
    start() {
      if (timer !== undefined) return;
      void runPass();
      timer = setInterval(() => void runPass(), intervalMs);
      // the loop alone never keeps a process alive
      timer.unref();
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
