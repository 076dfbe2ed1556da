import { setTimeout as wait } from 'node:timers/promises';
import pRetry from 'p-retry';
import { isVdiError, VdiError } from '../errors.js';
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

/** Waits `ms` milliseconds, or rejects as soon as `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Options of one {@link callWithRetry}: the retry budget, a signal that cancels it, and how it waits. */
export interface CallWithRetryOptions extends RetryOptions {
  /** Cancels the call: no further try starts and a wait between tries ends at once. */
  signal?: AbortSignal;
  /** Tests pass one that returns at once and records the waits. */
  sleep?: Sleep;
  /** Told each transient failure that is about to be tried again. */
  onRetry?: (failure: VdiError) => void;
}

const maxBackoffMs = 2000;
const maxRetryAfterMs = 10_000;

const sleepFor: Sleep = (ms, signal) => wait(ms, undefined, signal ? { signal } : {});

// The apiserver's Retry-After is the wait it asked for; otherwise a doubling backoff, jittered up to twice.
function delayBefore(retry: number, error: VdiError, minDelayMs: number): number {
  const seconds = error.details.retryAfterSeconds;
  if (typeof seconds === 'number' && seconds >= 0) return Math.min(seconds * 1000, maxRetryAfterMs);
  return Math.min(minDelayMs * 2 ** retry * (1 + Math.random()), maxBackoffMs);
}

function cancelled(doing: string, signal: AbortSignal): VdiError {
  return new VdiError('CANCELLED', `Could not ${doing}: the caller cancelled it.`, { cause: signal.reason });
}

/**
 * Runs one apiserver call through `p-retry`, retrying only errors marked retryable. Conflicts are never retried
 * here: the caller re-reads and re-plans. A `Retry-After` from the apiserver replaces the backoff before the next
 * try. The waits go through `sleep`, so p-retry's own timer is never used and a test waits for nothing.
 *
 * @throws {@link VdiError} the translated error of the last try; `CANCELLED` when `signal` aborted.
 */
export async function callWithRetry<T>(
  doing: string,
  call: () => Promise<T>,
  options: CallWithRetryOptions = {},
): Promise<T> {
  const { signal, sleep = sleepFor, retries = 4, minDelayMs = 100, onRetry } = options;
  const isRetried = (error: Error, retriesLeft: number) =>
    retriesLeft > 0 && isVdiError(error) && error.retryable && !signal?.aborted;
  try {
    return await pRetry(
      async () => {
        try {
          return await call();
        } catch (error) {
          throw toVdiError(error, doing);
        }
      },
      {
        retries,
        // the backoff is waited in onFailedAttempt, through the injected sleep
        minTimeout: 0,
        ...(signal ? { signal } : {}),
        shouldRetry: ({ error, retriesLeft }) => isRetried(error, retriesLeft),
        onFailedAttempt: async ({ error, retriesConsumed, retriesLeft }) => {
          if (!isRetried(error, retriesLeft)) return;
          onRetry?.(error as VdiError);
          await sleep(delayBefore(retriesConsumed, error as VdiError, minDelayMs), signal);
        },
      },
    );
  } catch (error) {
    if (signal?.aborted) throw cancelled(doing, signal);
    throw error;
  }
}
