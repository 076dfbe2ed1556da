import { setTimeout as pause } from 'node:timers/promises';
import { VdiError } from '../errors.js';

// a condition that holds soon is seen soon; a long wait asks ten times a second, not forty
const firstPauseMs = 25;
const longestPauseMs = 100;

/** Options of {@link waitFor}. @category testing */
export interface WaitForOptions {
  /** What is awaited, as the failure message names it: `the VMI of desk-1 to run`. */
  describe: string;
  /** How long to keep asking before failing; 30 s unless given. */
  timeoutMs?: number;
}

/** Options of {@link waitFor} that judge the value `condition` returns, so a timeout shows the last one. @category testing */
export interface WaitUntilOptions<T> extends WaitForOptions {
  /** Whether the value is the awaited one. */
  until: (value: T) => boolean;
}

function describeSeen(seen: { value: unknown } | { error: unknown } | undefined): string {
  if (seen === undefined) return 'nothing (the first check had not answered)';
  if ('error' in seen)
    return `an error: ${seen.error instanceof Error ? seen.error.message : String(seen.error)}`;
  if (typeof seen.value === 'string') return JSON.stringify(seen.value);
  try {
    return JSON.stringify(seen.value) ?? String(seen.value);
  } catch {
    return String(seen.value);
  }
}

/**
 * Asks `condition` again after 25 ms, then 50, then every 100 ms until it returns a value that is neither `undefined`, `null` nor `false`
 * (or, with `until`, a value that `until` accepts), and resolves with that value. A `condition` that throws (an
 * `expect` that does not hold yet, a 404) is asked again too. Meant for state that other processes change (the
 * apiserver, the simulator, a CLI); anything decided by time should take a test clock instead.
 *
 * @example
 * ```ts
 * const vmi = await waitFor(
 *   async () => {
 *     const found = await kube.getVmi(namespace, 'desk-1');
 *     return found?.status?.phase === 'Running' ? found : undefined;
 *   },
 *   { describe: 'the VMI of desk-1 to run' },
 * );
 * const vm = await waitFor(() => kube.getVm(namespace, 'desk-1'), {
 *   describe: 'desk-1 to show Stopped',
 *   until: (found) => found?.status?.printableStatus === 'Stopped',
 * });
 * ```
 * @throws `VdiError` `INVALID_INPUT` for an empty `describe` or a `timeoutMs` that is not a positive number;
 * an `Error` naming what was awaited and what was last seen (the last value, or the last error) on timeout.
 * @category testing
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitUntilOptions<T>): Promise<T>;
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions,
): Promise<Exclude<T, undefined | null | false>>;
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions & { until?: (value: T) => boolean },
): Promise<T> {
  const accept = options.until ?? ((value: T) => value !== undefined && value !== null && value !== false);
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!options.describe.trim())
    throw new VdiError('INVALID_INPUT', 'waitFor needs a description of what it waits for.');
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new VdiError('INVALID_INPUT', `waitFor needs a positive timeoutMs, not ${timeoutMs}.`);
  const deadline = performance.now() + timeoutMs;
  let seen: { value: unknown } | { error: unknown } | undefined;
  let pauseMs = firstPauseMs;
  for (;;) {
    try {
      const value = await condition();
      if (accept(value)) return value;
      seen = { value };
    } catch (error) {
      seen = { error };
    }
    if (performance.now() >= deadline)
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${options.describe}; last seen: ${describeSeen(seen)}`,
      );
    await pause(pauseMs);
    pauseMs = Math.min(pauseMs * 2, longestPauseMs);
  }
}
