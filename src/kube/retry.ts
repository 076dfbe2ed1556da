import { setTimeout as wait } from 'node:timers/promises';
import { VdiError } from '../errors.js';
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
 * Runs one apiserver call, retrying only errors marked retryable. Conflicts are never retried here: the
 * caller re-reads and re-plans. A `Retry-After` from the apiserver replaces the backoff before the next try.
 *
 * @throws {@link VdiError} the translated error of the last try; `CANCELLED` when `signal` aborted.
 */
export async function callWithRetry<T>(
  doing: string,
  call: () => Promise<T>,
  options: CallWithRetryOptions = {},
): Promise<T> {
  const { signal, sleep = sleepFor, retries = 4, minDelayMs = 100, onRetry } = options;
  for (let retry = 0; ; retry++) {
    if (signal?.aborted) throw cancelled(doing, signal);
    let failure: VdiError;
    try {
      return await call();
    } catch (error) {
      failure = toVdiError(error, doing);
    }
    if (signal?.aborted) throw cancelled(doing, signal);
    if (!failure.retryable || retry >= retries) throw failure;
    onRetry?.(failure);
    try {
      await sleep(delayBefore(retry, failure, minDelayMs), signal);
    } catch (error) {
      if (signal?.aborted) throw cancelled(doing, signal);
      throw error;
    }
  }
}
