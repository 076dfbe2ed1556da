import { describe, expect, it } from 'vitest';
import { createSlots } from '../../../src/kube/cluster-caches.js';

describe("the slots of a process's cache lists", () => {
  it('run at most so many at once, the others in the order they came, and free a slot also when a run fails', async () => {
    const slots = createSlots(2);
    const started: number[] = [];
    const finish = new Map<number, () => void>();
    let running = 0;
    let most = 0;
    const run = (index: number, fail = false) =>
      slots(async () => {
        started.push(index);
        running += 1;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => finish.set(index, resolve));
        running -= 1;
        if (fail) throw new Error(`run ${index} failed`);
        return index;
      });
    const runs = [run(1, true), run(2), run(3), run(4)];
    await Promise.resolve();
    expect(started).toEqual([1, 2]);
    finish.get(1)?.();
    await expect(runs[0]).rejects.toThrow('run 1 failed');
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2, 3]);
    for (const index of [2, 3]) finish.get(index)?.();
    await new Promise((resolve) => setImmediate(resolve));
    finish.get(4)?.();
    expect(await Promise.all(runs.slice(1))).toEqual([2, 3, 4]);
    expect(most).toBe(2);
  });
});
