import type { Clock } from '../clock.js';
import { isVdiError, type VdiErrorCode } from '../errors.js';

/** A release the broker carries out after answering 202. @category broker */
export interface BrokerTask {
  id: string;
  action: 'vdi release' | 'vdi force-release';
  /** The desktop ID. */
  desktop: string;
  /** Who asked for it. */
  user: string;
  status: 'running' | 'done' | 'error';
  startedAt: string;
  finishedAt?: string;
  error?: { code: VdiErrorCode; message: string };
}

/**
 * Tasks of one broker process, kept in memory; the newest `limit` finished tasks stay readable, and each desktop
 * has at most one running task, so what the registry holds is bounded however many requests arrive.
 */
export interface TaskRegistry {
  /**
   * Records a task and runs `work` without waiting for it; while a task of the same desktop runs, returns that
   * one instead and does not run `work`.
   */
  run(task: Pick<BrokerTask, 'id' | 'action' | 'desktop' | 'user'>, work: () => Promise<unknown>): BrokerTask;
  get(id: string): BrokerTask | undefined;
  /** Resolves once every running task has ended. */
  settled(): Promise<void>;
}

/** Builds a {@link TaskRegistry} that stamps tasks with `clock`. */
export function createTaskRegistry(clock: Clock, limit = 1000): TaskRegistry {
  const tasks = new Map<string, BrokerTask>();
  const running = new Set<Promise<void>>();
  const runningByDesktop = new Map<string, BrokerTask>();

  const forget = () => {
    // Map keeps insertion order, so the first finished entries are the oldest.
    for (const [id, task] of tasks) {
      if (tasks.size <= limit) return;
      if (task.status !== 'running') tasks.delete(id);
    }
  };

  return {
    run(fields, work) {
      // a second release of a desktop while one runs would only race it
      const current = runningByDesktop.get(fields.desktop);
      if (current) return current;
      const task: BrokerTask = { ...fields, status: 'running', startedAt: clock.now().toISOString() };
      tasks.set(task.id, task);
      runningByDesktop.set(task.desktop, task);
      const done = work().then(
        () => {
          task.status = 'done';
        },
        (error: unknown) => {
          task.status = 'error';
          task.error = isVdiError(error)
            ? { code: error.code, message: error.message }
            : { code: 'INTERNAL', message: 'The task failed unexpectedly; see the broker log.' };
        },
      );
      const tracked = done.finally(() => {
        task.finishedAt = clock.now().toISOString();
        runningByDesktop.delete(task.desktop);
        running.delete(tracked);
        forget();
      });
      running.add(tracked);
      return task;
    },
    get: (id) => tasks.get(id),
    async settled() {
      while (running.size > 0) await Promise.all(running);
    },
  };
}
