import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { waitFor } from '../../../src/testing/wait-for.js';

function answers<T>(...values: T[]): () => T {
  let index = 0;
  return () => values[Math.min(index++, values.length - 1)] as T;
}

describe('waitFor', () => {
  it('resolves with the first value that is neither undefined, null nor false', async () => {
    expect(
      await waitFor(answers<string | undefined | null | false>(undefined, null, false, 'ready'), {
        describe: 'readiness',
      }),
    ).toBe('ready');
  });

  it('resolves with the first value until accepts, and asks again after a throw', async () => {
    let calls = 0;
    const value = await waitFor(
      async () => {
        calls += 1;
        if (calls === 1) throw new Error('not found');
        return calls;
      },
      { describe: 'the third call', until: (count) => count === 3 },
    );
    expect(value).toBe(3);
  });

  it('names what it awaited and the last value seen when it times out', async () => {
    const error = await waitFor(() => ({ phase: 'Scheduling' }), {
      describe: 'the VMI to run',
      until: (vmi) => vmi.phase === 'Running',
      timeoutMs: 50,
    }).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe(
      'Timed out after 50 ms waiting for the VMI to run; last seen: {"phase":"Scheduling"}',
    );
  });

  it('names the last error seen when every check threw', async () => {
    const error = await waitFor(
      () => {
        throw new Error('404 not found');
      },
      { describe: 'the VM', timeoutMs: 50 },
    ).catch((caught: unknown) => caught);
    expect((error as Error).message).toBe(
      'Timed out after 50 ms waiting for the VM; last seen: an error: 404 not found',
    );
  });

  it.each([
    ['an empty description', { describe: ' ' }],
    ['a zero timeout', { describe: 'x', timeoutMs: 0 }],
    ['a timeout that is not a number', { describe: 'x', timeoutMs: Number.NaN }],
  ])('refuses %s without asking once', async (_, options) => {
    let calls = 0;
    const error = await waitFor(() => {
      calls += 1;
      return true;
    }, options).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect(calls).toBe(0);
  });
});
