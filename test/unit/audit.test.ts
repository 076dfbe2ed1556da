import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AuditRecord, MemoryAuditSink } from '../../src/audit.js';
import { isVdiError } from '../../src/errors.js';

function entry(index: number): AuditRecord {
  return {
    at: new Date(Date.UTC(2026, 6, 2, 12, 0, index)).toISOString(),
    action: 'vdi claim',
    user: `user-${index}`,
    target: `vm/corral-vms/devpool-${index}`,
    status: 'ok',
  };
}

describe('MemoryAuditSink', () => {
  it('keeps records oldest first', () => {
    const sink = new MemoryAuditSink(10);
    for (const index of [1, 2, 3]) sink.record(entry(index));
    expect(sink.list().map((record) => record.user)).toEqual(['user-1', 'user-2', 'user-3']);
  });

  it('keeps a thousand records unless told otherwise', () => {
    const sink = new MemoryAuditSink();
    for (let index = 0; index < 1005; index++) sink.record(entry(index));
    expect(sink.limit).toBe(1000);
    expect(sink.list()).toHaveLength(1000);
    expect(sink.list()[0]?.user).toBe('user-5');
  });

  it('drops the oldest records past its limit and keeps the newest in order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 200 }), (limit, count) => {
        const sink = new MemoryAuditSink(limit);
        for (let index = 0; index < count; index++) sink.record(entry(index));
        const kept = sink.list().map((record) => record.user);
        const newest = Array.from({ length: count }, (_, index) => `user-${index}`).slice(-limit);
        expect(kept).toEqual(count === 0 ? [] : newest);
      }),
    );
  });

  it('hands out a copy, so changing the list changes nothing kept', () => {
    const sink = new MemoryAuditSink(5);
    sink.record(entry(1));
    sink.list().pop();
    expect(sink.list()).toHaveLength(1);
  });

  it('keeps nothing with a limit of 0', () => {
    const sink = new MemoryAuditSink(0);
    sink.record(entry(1));
    expect(sink.list()).toEqual([]);
  });

  it.each([Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY])(
    'refuses a limit of %s with INVALID_INPUT',
    (limit) => {
      let thrown: unknown;
      try {
        new MemoryAuditSink(limit);
      } catch (error) {
        thrown = error;
      }
      expect(isVdiError(thrown, 'INVALID_INPUT')).toBe(true);
      expect((thrown as Error).message).toMatch(/whole number/);
    },
  );
});
