/**
 * A queue of object keys worked by a bounded number of concurrent workers. One key is never worked twice at the
 * same time: a key added while it is being worked runs once more afterwards. A worker that throws is retried with
 * backoff.
 */
export class KeyedWorkQueue {
  private readonly waiting = new Set<string>();
  private readonly active = new Set<string>();
  private readonly again = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: Array<() => void> = [];
  private stopped = false;
  private work: ((key: string) => Promise<void>) | undefined;

  constructor(
    private readonly concurrency: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts working keys with `work`; keys added before are kept until then. */
  start(work: (key: string) => Promise<void>): void {
    this.work = work;
    this.pump();
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.active.has(key)) this.again.add(key);
    else this.waiting.add(key);
    this.pump();
  }

  /** Adds `key` after `ms` milliseconds; an earlier pending wake-up for the key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Stops taking keys and waits for the workers that are running. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.waiting.clear();
    this.again.clear();
    if (this.active.size > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    if (this.work === undefined) return;
    while (!this.stopped && this.active.size < this.concurrency && this.waiting.size > 0) {
      const key = this.waiting.values().next().value as string;
      this.waiting.delete(key);
      this.active.add(key);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    try {
      await this.work?.(key);
      this.failures.delete(key);
    } catch (error) {
      const count = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, count);
      this.log(`${key}: ${(error as Error).message ?? String(error)} (attempt ${count}, retrying)`);
      this.addAfter(key, Math.min(50 * 2 ** count, 5000));
    } finally {
      this.active.delete(key);
      if (this.again.delete(key)) this.waiting.add(key);
      if (this.active.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
      this.pump();
    }
  }
}
