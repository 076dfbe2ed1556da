import type { KeepSparesResult } from '../spares/keep-spares.js';
import type { Vdi } from '../vdi.js';

/** What one pass of a broker's spare keeper did. @category broker */
export interface SparesPassResult {
  /** Each pool's pass that finished. */
  kept: KeepSparesResult[];
  /** `vm/<namespace>/<pool>` (or the namespace, when its pools could not be listed) of each pass that failed. */
  failed: string[];
}

/** The spare keeper loop of a broker. */
export interface SparesLoop {
  /** One keeper pass over the VM pools with `minReady` of the served namespaces; a running pass is joined. */
  runPass(): Promise<SparesPassResult>;
  start(): void;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

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
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<SparesPassResult> | undefined;

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
  }

  function runPass(): Promise<SparesPassResult> {
    running ??= (async () => {
      const result: SparesPassResult = { kept: [], failed: [] };
      await Promise.all(namespaces.map((namespace) => keepNamespace(namespace, result)));
      return result;
    })().finally(() => {
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
