import { setTimeout as sleep } from 'node:timers/promises';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';

const firstPollMs = 50;
const longestPollMs = 250;

/**
 * Reads an object KubeVirt works on until `settled` gives a result, waiting 50 ms and then twice as long each time
 * up to 250 ms (real time); the deadline counts from `started` on `ctx.clock`.
 *
 * @throws the error of `gone` when the object is not there, whatever `settled` throws (a failure KubeVirt
 *   reported), the error of `timedOut` once `timeoutMs` has passed, and {@link VdiError} `CANCELLED` when
 *   `signal` aborts the wait.
 */
export async function pollKubeVirtObject<T, R>(
  ctx: VdiContext,
  input: {
    /** Names the object in the cancelled error: `VirtualMachineClone ns/name`. */
    what: string;
    read: () => Promise<T | undefined>;
    settled: (object: T) => R | undefined;
    gone: () => VdiError;
    timedOut: (object: T) => VdiError;
    started: number;
    timeoutMs: number;
    signal?: AbortSignal | undefined;
  },
): Promise<R> {
  const { signal } = input;
  let interval = firstPollMs;
  for (;;) {
    const object = await input.read();
    if (object === undefined) throw input.gone();
    const result = input.settled(object);
    if (result !== undefined) return result;
    if (ctx.clock.now().getTime() - input.started >= input.timeoutMs) throw input.timedOut(object);
    try {
      await sleep(interval, undefined, signal ? { signal } : {});
    } catch (error) {
      throw new VdiError('CANCELLED', `Waiting for ${input.what} was cancelled by the caller.`, {
        cause: error,
      });
    }
    interval = Math.min(interval * 2, longestPollMs);
  }
}
