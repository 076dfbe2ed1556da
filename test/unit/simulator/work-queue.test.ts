import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeyedWorkQueue } from '../../../src/testing/kubevirt/work-queue.js';

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KeyedWorkQueue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps keys until started, never works one key twice at once, and runs it again when added meanwhile', async () => {
    const queue = new KeyedWorkQueue(4, () => {});
    const gate = deferred();
    const calls: string[] = [];
    let running = 0;
    let most = 0;
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.start(async (key) => {
      calls.push(key);
      running += 1;
      most = Math.max(most, running);
      if (key === 'a' && calls.filter((call) => call === 'a').length === 1) await gate.promise;
      running -= 1;
    });
    await flush();
    expect(calls).toEqual(['a', 'b']);
    queue.add('a');
    queue.add('a');
    await flush();
    expect(calls).toEqual(['a', 'b']);
    gate.resolve();
    await flush();
    expect(calls).toEqual(['a', 'b', 'a']);
    expect(most).toBe(2);
  });

  it('works at most `concurrency` keys at a time', async () => {
    const queue = new KeyedWorkQueue(2, () => {});
    const gates = new Map<string, ReturnType<typeof deferred>>();
    queue.start(async (key) => {
      const gate = deferred();
      gates.set(key, gate);
      await gate.promise;
    });
    for (const key of ['a', 'b', 'c']) queue.add(key);
    await flush();
    expect([...gates.keys()]).toEqual(['a', 'b']);
    gates.get('a')?.resolve();
    await flush();
    expect([...gates.keys()]).toEqual(['a', 'b', 'c']);
  });

  it('retries a failing key with growing backoff and logs each failure', async () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const queue = new KeyedWorkQueue(1, (line) => lines.push(line));
    let attempts = 0;
    queue.start(async () => {
      attempts += 1;
      if (attempts < 3) throw new Error('conflict');
    });
    queue.add('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toBe(2);
    await vi.advanceTimersByTimeAsync(200);
    expect(attempts).toBe(3);
    expect(lines).toEqual(['a: conflict (attempt 1, retrying)', 'a: conflict (attempt 2, retrying)']);
  });

  it('keeps the earliest of several delayed adds and drops everything once stopped', async () => {
    vi.useFakeTimers();
    const queue = new KeyedWorkQueue(1, () => {});
    const calls: string[] = [];
    queue.start(async (key) => {
      calls.push(key);
    });
    queue.addAfter('a', 500);
    queue.addAfter('a', 100);
    queue.addAfter('a', 300);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toEqual(['a']);
    queue.addAfter('b', 10);
    await queue.stop();
    queue.add('c');
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toEqual(['a']);
  });
});
