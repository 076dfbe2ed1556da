import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError, VdiError } from '../../../src/errors.js';
import { callWithRetry } from '../../../src/kube/retry.js';

function unavailable(headers: Record<string, string> = {}): ApiException<string> {
  const body = JSON.stringify({ kind: 'Status', code: 503, reason: 'ServiceUnavailable', message: 'busy' });
  return new ApiException(503, 'HTTP 503', body, headers);
}

function forbidden(): ApiException<string> {
  return new ApiException(
    403,
    'HTTP 403',
    JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'no' }),
    {},
  );
}

/** A call that throws the given errors in turn, then returns `'done'`; it counts its tries. */
function failing(...errors: unknown[]): { call: () => Promise<string>; tries: () => number } {
  let tries = 0;
  return {
    call: async () => {
      const error = errors[tries++];
      if (error !== undefined) throw error;
      return 'done';
    },
    tries: () => tries,
  };
}

/** A sleep that records each wait and returns at once. */
function recordingSleep(): { sleep: (ms: number) => Promise<void>; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms) => {
      waits.push(ms);
    },
  };
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('callWithRetry', () => {
  it('returns the first success without waiting', async () => {
    const { sleep, waits } = recordingSleep();
    await expect(callWithRetry('read Lease a/b', async () => 7, { sleep })).resolves.toBe(7);
    expect(waits).toEqual([]);
  });

  it('retries a retryable error with a backoff that doubles from minDelayMs, jittered up to twice', async () => {
    const { sleep, waits } = recordingSleep();
    const { call, tries } = failing(unavailable(), unavailable(), unavailable());
    await expect(callWithRetry('read Lease a/b', call, { sleep, minDelayMs: 100 })).resolves.toBe('done');
    expect(tries()).toBe(4);
    expect(waits).toHaveLength(3);
    waits.forEach((ms, retry) => {
      expect(ms).toBeGreaterThanOrEqual(100 * 2 ** retry);
      expect(ms).toBeLessThanOrEqual(200 * 2 ** retry);
    });
  });

  it('caps the backoff at two seconds', async () => {
    const { sleep, waits } = recordingSleep();
    const { call } = failing(unavailable(), unavailable());
    await callWithRetry('read Lease a/b', call, { sleep, minDelayMs: 5000 });
    expect(waits).toEqual([2000, 2000]);
  });

  it('waits exactly the Retry-After instead of the backoff', async () => {
    const { sleep, waits } = recordingSleep();
    const { call } = failing(unavailable({ 'retry-after': '3' }), unavailable({ 'retry-after': '1' }));
    await expect(callWithRetry('read Lease a/b', call, { sleep, minDelayMs: 100 })).resolves.toBe('done');
    expect(waits).toEqual([3000, 1000]);
  });

  it('caps a Retry-After at ten seconds', async () => {
    const { sleep, waits } = recordingSleep();
    const { call } = failing(unavailable({ 'retry-after': '120' }));
    await callWithRetry('read Lease a/b', call, { sleep });
    expect(waits).toEqual([10_000]);
  });

  it('gives up after `retries` retries with the translated error', async () => {
    const { sleep, waits } = recordingSleep();
    const { call, tries } = failing(unavailable(), unavailable(), unavailable());
    const error = await rejectionOf(callWithRetry('read Lease a/b', call, { sleep, retries: 2 }));
    expect(tries()).toBe(3);
    expect(waits).toHaveLength(2);
    expect(isVdiError(error, 'CLUSTER_UNAVAILABLE')).toBe(true);
    expect((error as VdiError).message).toMatch(/^Could not read Lease a\/b: busy\./);
  });

  it('tells onRetry each failure it tries again, and not the last one it gives up on', async () => {
    const { sleep } = recordingSleep();
    const told: string[] = [];
    const { call } = failing(unavailable(), unavailable(), unavailable());
    await rejectionOf(
      callWithRetry('read Lease a/b', call, {
        sleep,
        retries: 2,
        onRetry: (failure) => told.push(failure.code),
      }),
    );
    expect(told).toEqual(['CLUSTER_UNAVAILABLE', 'CLUSTER_UNAVAILABLE']);
  });

  it('never retries an error that is not retryable', async () => {
    const { sleep, waits } = recordingSleep();
    const { call, tries } = failing(forbidden());
    const error = await rejectionOf(callWithRetry('read Lease a/b', call, { sleep }));
    expect(isVdiError(error, 'FORBIDDEN')).toBe(true);
    expect(tries()).toBe(1);
    expect(waits).toEqual([]);
  });

  it('stops waiting at once when the signal aborts, with a cancelled error', async () => {
    const controller = new AbortController();
    const { call, tries } = failing(unavailable({ 'retry-after': '10' }));
    const waiting = callWithRetry('read Lease a/b', call, {
      signal: controller.signal,
      // a sleep that only ends by the abort
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    });
    await Promise.resolve();
    controller.abort();
    const error = await rejectionOf(waiting);
    expect(isVdiError(error, 'CANCELLED')).toBe(true);
    expect((error as VdiError).retryable).toBe(false);
    expect((error as VdiError).message).toBe('Could not read Lease a/b: the caller cancelled it.');
    expect(tries()).toBe(1);
  });

  it('does not call at all with a signal that is already aborted', async () => {
    const { call, tries } = failing();
    const error = await rejectionOf(
      callWithRetry('read Lease a/b', call, { signal: AbortSignal.abort(), sleep: recordingSleep().sleep }),
    );
    expect(isVdiError(error, 'CANCELLED')).toBe(true);
    expect(tries()).toBe(0);
  });

  it('does not retry after an abort that came during the call', async () => {
    const controller = new AbortController();
    const { sleep, waits } = recordingSleep();
    let tries = 0;
    const call = async () => {
      tries++;
      controller.abort();
      throw unavailable();
    };
    const error = await rejectionOf(
      callWithRetry('read Lease a/b', call, { signal: controller.signal, sleep }),
    );
    expect(isVdiError(error, 'CANCELLED')).toBe(true);
    expect(tries).toBe(1);
    expect(waits).toEqual([]);
  });

  it('passes a VdiError thrown by the call through untouched when it is not retryable', async () => {
    const original = new VdiError('NOT_HOLDER', 'not yours');
    const error = await rejectionOf(
      callWithRetry('x', failing(original).call, { sleep: recordingSleep().sleep }),
    );
    expect(error).toBe(original);
  });
});
