import type { Clock } from '../clock.js';

/** A clock that moves only when told to. @category testing */
export interface TestClock extends Clock {
  /** Moves the time forward by `ms` milliseconds. */
  advance(ms: number): void;
  /** Sets the time. */
  set(time: Date | string): void;
}

/**
 * Creates a {@link TestClock} starting at `start`, for driving timeouts, Lease expiry and reclaim without sleeping.
 *
 * @example
 * ```ts
 * const clock = createTestClock('2026-07-02T12:00:00Z');
 * const vdi = createVdi({ kubeConfig, clock });
 * clock.advance(61 * 60_000); // past a claim's one-hour Lease
 * ```
 * @category testing
 */
export function createTestClock(start: Date | string = '2026-07-02T12:00:00Z'): TestClock {
  let current = new Date(start).getTime();
  return {
    now: () => new Date(current),
    advance(ms) {
      current += ms;
    },
    set(time) {
      current = new Date(time).getTime();
    },
  };
}
