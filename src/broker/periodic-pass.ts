/** A pass the broker runs now and then every interval, one at a time. */
export interface PeriodicPass<T> {
  /** Runs the pass now; a call while one runs joins it. */
  runPass(): Promise<T>;
  /** Runs a pass now and then every interval until {@link PeriodicPass.stop}. Calling it twice does nothing. */
  start(): void;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

/** Runs `pass` on a timer of `intervalMs`, never two at once. */
export function createPeriodicPass<T>(pass: () => Promise<T>, intervalMs: number): PeriodicPass<T> {
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<T> | undefined;

  function runPass(): Promise<T> {
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
