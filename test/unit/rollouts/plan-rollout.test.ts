import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { removalHolder, rollOutAtAnnotation } from '../../../src/keys.js';
import { type PoolRollout, readPoolRollout } from '../../../src/pool-rollout.js';
import { planRollout, type RolloutInput } from '../../../src/rollouts/plan-rollout.js';
import { type LeaseShape, leaseOf, member, now } from '../claims/member-fixtures.js';

interface Shape {
  power?: MemberFacts['power'];
  /** Made from the new golden VM already. */
  done?: boolean;
  lease?: LeaseShape;
}

const rollout: PoolRollout = {
  to: 'golden-v2',
  maxUnavailable: 2,
  startedAt: '2026-07-02T12:00:00.000Z',
  rebuilding: [],
};

function plan(pool: Array<[string, Shape]>, buffer: number, options: Partial<RolloutInput> = {}) {
  return planRollout({
    rollout,
    members: pool.map(([name, shape]) => ({
      ...member(name, { power: shape.power ?? 'stopped' }),
      source: shape.done ? 'golden-v2' : 'golden-v1',
    })),
    leases: pool.flatMap(([name, shape]) => (shape.lease ? [leaseOf(name, shape.lease)] : [])),
    buffer,
    rollTo: new Map(),
    now,
    ...options,
  });
}

describe('planRollout', () => {
  it('rebuilds free stopped members first, at most maxUnavailable, and never a claimed one', () => {
    const result = plan(
      [
        ['devpool-1', { power: 'running', lease: { holder: 'ann' } }],
        ['devpool-2', { power: 'running' }],
        ['devpool-3', {}],
        ['devpool-4', {}],
        ['devpool-5', {}],
        ['devpool-6', { done: true }],
      ],
      1,
    );
    expect(result).toMatchObject({
      onTarget: ['devpool-6'],
      total: 6,
      rebuild: ['devpool-3', 'devpool-4'],
      surge: [],
      claimed: ['devpool-1'],
      markRollTo: ['devpool-1'],
      markDeadline: [],
      done: false,
    });
  });

  it('counts the journal against maxUnavailable and resumes it first', () => {
    const result = plan(
      [
        ['devpool-1', {}],
        ['devpool-2', {}],
      ],
      0,
      { rollout: { ...rollout, rebuilding: ['devpool-3'] } },
    );
    expect(result).toMatchObject({ resume: ['devpool-3'], rebuild: ['devpool-1'], total: 3 });
  });

  it('takes a running free member only while the buffer stays running, starting a rebuilt one in its place', () => {
    const pool: Array<[string, Shape]> = [
      ['devpool-1', { power: 'running' }],
      ['devpool-2', { power: 'running' }],
      ['devpool-3', { done: true }],
      ['devpool-4', { done: true }],
    ];
    expect(plan(pool, 2)).toMatchObject({
      surge: ['devpool-3', 'devpool-4'],
      rebuild: ['devpool-1', 'devpool-2'],
    });
    expect(plan(pool, 2, { rollout: { ...rollout, maxUnavailable: 1 } })).toMatchObject({
      surge: ['devpool-3'],
      rebuild: ['devpool-2'],
      heldBack: 1,
    });
    // nothing rebuilt to start in their place: the buffer keeps both
    expect(plan(pool.slice(0, 2), 2)).toMatchObject({ surge: [], rebuild: [], heldBack: 2 });
  });

  it('marks the claimed members with the deadline once, and leaves a removal under way alone', () => {
    const deadline = '2026-07-02T18:00:00.000Z';
    const marked = leaseOf('devpool-2', { holder: 'bob' });
    marked.metadata.annotations = { ...marked.metadata.annotations, [rollOutAtAnnotation]: deadline };
    const result = plan(
      [
        ['devpool-1', { lease: { holder: 'ann' } }],
        ['devpool-2', {}],
        ['devpool-3', { lease: { holder: removalHolder } }],
      ],
      0,
      {
        rollout: { ...rollout, deadline },
        leases: [
          leaseOf('devpool-1', { holder: 'ann' }),
          marked,
          leaseOf('devpool-3', { holder: removalHolder }),
        ],
        rollTo: new Map([['devpool-2', 'golden-v2']]),
      },
    );
    expect(result).toMatchObject({
      claimed: ['devpool-1', 'devpool-2'],
      markDeadline: ['devpool-1'],
      markRollTo: ['devpool-1'],
      rebuild: [],
    });
  });

  it('starts nothing new while paused, and is done once every member is on the new golden VM', () => {
    const paused = plan([['devpool-1', {}]], 0, {
      rollout: { ...rollout, paused: true, rebuilding: ['devpool-2'] },
    });
    expect(paused).toMatchObject({ rebuild: [], resume: ['devpool-2'], done: false });
    expect(plan([['devpool-1', { done: true, lease: { holder: 'ann' } }]], 0)).toMatchObject({
      done: true,
      claimed: [],
    });
  });

  it('never plans more than maxUnavailable at once nor leaves fewer free running members than the buffer', () => {
    const shape = fc.record({
      power: fc.constantFrom<MemberFacts['power']>('stopped', 'running', 'starting'),
      done: fc.boolean(),
      claimed: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(shape, { maxLength: 12 }),
        fc.nat(6),
        fc.integer({ min: 1, max: 4 }),
        (shapes, buffer, maxUnavailable) => {
          const pool = shapes.map((one, index): [string, Shape] => [
            `devpool-${index + 1}`,
            { power: one.power, done: one.done, ...(one.claimed ? { lease: { holder: 'ann' } } : {}) },
          ]);
          const result = plan(pool, buffer, { rollout: { ...rollout, maxUnavailable } });
          expect(result.rebuild.length).toBeLessThanOrEqual(maxUnavailable);
          const warm = (one: Shape) => one.power !== 'stopped' && !one.lease;
          const before = pool.filter(([, one]) => warm(one)).length;
          const taken = pool.filter(([name, one]) => warm(one) && result.rebuild.includes(name)).length;
          const after = before - taken + result.surge.length;
          if (taken > 0) expect(after).toBeGreaterThanOrEqual(buffer);
          for (const name of [...result.rebuild, ...result.surge]) {
            expect(pool.find(([candidate]) => candidate === name)?.[1].lease).toBeUndefined();
          }
        },
      ),
    );
  });
});

describe('readPoolRollout', () => {
  it('reads back what is stored and refuses a record edited into something else', () => {
    expect(readPoolRollout(JSON.parse(JSON.stringify(rollout)))).toEqual(rollout);
    expect(() => readPoolRollout({ ...rollout, maxUnavailable: 0 })).toThrow();
    expect(() => readPoolRollout({ ...rollout, to: 'Not A Name' })).toThrow();
    expect(() => readPoolRollout({ ...rollout, deadline: 'tomorrow' })).toThrow();
  });
});
