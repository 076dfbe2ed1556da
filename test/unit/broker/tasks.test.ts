import { describe, expect, it } from 'vitest';
import { createTaskRegistry } from '../../../src/broker/tasks.js';
import { VdiError } from '../../../src/errors.js';
import { createTestClock } from '../../../src/testing/test-clock.js';

const fields = (id: string, desktop = 'vm/corral-vms/devpool-1') => ({
  id,
  action: 'vdi release' as const,
  desktop,
  user: 'alice',
});

describe('createTaskRegistry', () => {
  it('records a task as running, then done, stamped by the clock', async () => {
    const clock = createTestClock('2026-07-02T12:00:00Z');
    const tasks = createTaskRegistry(clock);
    let finish: () => void = () => {};
    const task = tasks.run(fields('t1'), () => new Promise<void>((resolve) => (finish = resolve)));
    expect(task).toMatchObject({ status: 'running', startedAt: '2026-07-02T12:00:00.000Z' });
    clock.advance(1500);
    finish();
    await tasks.settled();
    expect(tasks.get('t1')).toMatchObject({ status: 'done', finishedAt: '2026-07-02T12:00:01.500Z' });
    expect(tasks.get('t1')?.error).toBeUndefined();
  });

  it.each([
    [
      new VdiError('STOP_FAILED', 'Could not stop it.'),
      { code: 'STOP_FAILED', message: 'Could not stop it.' },
    ],
    [
      new Error('secret detail'),
      { code: 'INTERNAL', message: 'The task failed unexpectedly; see the broker log.' },
    ],
  ])(
    'records a failure as an error with a code, never a raw message of an unexpected error',
    async (thrown, error) => {
      const tasks = createTaskRegistry(createTestClock());
      tasks.run(fields('t1'), () => Promise.reject(thrown));
      await tasks.settled();
      expect(tasks.get('t1')).toMatchObject({ status: 'error', error });
    },
  );

  it('forgets the oldest finished tasks beyond its limit, never a running one', async () => {
    const tasks = createTaskRegistry(createTestClock(), 2);
    tasks.run(fields('running', 'vm/corral-vms/stuck'), () => new Promise(() => {}));
    for (const id of ['a', 'b', 'c']) tasks.run(fields(id, `vm/corral-vms/${id}`), () => Promise.resolve());
    await new Promise((resolve) => setImmediate(resolve));
    expect(['running', 'a', 'b', 'c'].map((id) => tasks.get(id) !== undefined)).toEqual([
      true,
      false,
      false,
      true,
    ]);
  });

  it('keeps one running task per desktop: a second release while one runs gets the running one', async () => {
    const tasks = createTaskRegistry(createTestClock());
    let finish: () => void = () => {};
    let runs = 0;
    const work = () => {
      runs += 1;
      return new Promise<void>((resolve) => (finish = resolve));
    };
    const first = tasks.run(fields('first'), work);
    expect(tasks.run(fields('second'), work)).toBe(first);
    expect(tasks.get('second')).toBeUndefined();
    expect(tasks.run(fields('other', 'vm/corral-vms/devpool-2'), () => Promise.resolve()).id).toBe('other');
    expect(runs).toBe(1);
    finish();
    await tasks.settled();
    expect(tasks.run(fields('third'), () => Promise.resolve()).id).toBe('third');
  });
});
