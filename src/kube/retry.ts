import pRetry, { AbortError } from 'p-retry';
import { isVdiError } from '../errors.js';
import { toVdiError } from './errors.js';

/** How the adapters retry transient apiserver errors (429, 5xx, a dropped connection). @category configuration */
export interface RetryOptions {
  /**
   * Retries after the first try.
   * @defaultValue 4
   */
  retries?: number;
  /**
   * The first backoff in milliseconds; it doubles each time, up to two seconds.
   * @defaultValue 100
   */
  minDelayMs?: number;
}

/**
 * Runs one apiserver call, retrying only errors marked retryable. Conflicts are never retried here: the
 * caller re-reads and re-plans. A `Retry-After` from the apiserver sets the next wait.
 */
export async function callWithRetry<T>(
  doing: string,
  call: () => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const minDelayMs = options.minDelayMs ?? 100;
  return await pRetry(
    async () => {
      try {
        return await call();
      } catch (error) {
        const translated = toVdiError(error, doing);
        if (!translated.retryable) throw new AbortError(translated);
        throw translated;
      }
    },
    {
      retries: options.retries ?? 4,
      minTimeout: minDelayMs,
      maxTimeout: 2000,
      randomize: true,
      onFailedAttempt: async ({ error }) => {
        const seconds = isVdiError(error) ? error.details.retryAfterSeconds : undefined;
        if (typeof seconds === 'number' && seconds > 0)
          await new Promise((resolve) => setTimeout(resolve, Math.min(seconds, 10) * 1000));
      },
    },
  ).catch((error: unknown) => {
    throw toVdiError(error, doing);
  });
}
