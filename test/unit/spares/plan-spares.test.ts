import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { isVdiError } from '../../../src/errors.js';
import { validateMinReady } from '../../../src/spares/min-ready.js';
import { planSpares, type SparesInput, type SparesPlan } from '../../../src/spares/plan-spares.js';
import { type LeaseShape, leaseOf, type MemberShape, member, now } from '../claims/member-fixtures.js';
import { thrownBy } from '../claims/thrown-by.js';

type Pool = Array<[string, MemberShape & { spare?: boolean }, LeaseShape?]>;

function plan(pool: Pool, minReady: number, options: Partial<SparesInput> = {}): SparesPlan {
  return planSpares({
    minReady,
    members: pool.map(([name, shape]) => member(name, shape)),
    leases: pool.flatMap(([name, , lease]) => (lease ? [leaseOf(name, lease)] : [])),
    marked: new Set(pool.filter(([, shape]) => shape.spare).map(([name]) => name)),
    now,
    ...options,
  });
}

const names = (count: number) => Array.from({ length: count }, (_, index) => `devpool-${index + 1}`);

describe('planSpares', () => {
  it('starts the lowest free stopped members until minReady run', () => {
    expect(
      plan(
        [
          ['devpool-2', {}],
          ['devpool-10', {}],
          ['devpool-1', {}],
        ],
        2,
      ),
    ).toEqual({
      ready: [],
      start: ['devpool-1', 'devpool-2'],
      stop: [],
      unmark: [],
      short: 0,
    });
  });

  it('counts free members that run or start as ready, marked or not', () => {
    const result = plan(
      [
        ['devpool-1', { power: 'running' }],
        ['devpool-2', { power: 'starting', spare: true }],
        ['devpool-3', {}],
      ],
      2,
    );
    expect(result).toMatchObject({ ready: ['devpool-1', 'devpool-2'], start: [], stop: [], short: 0 });
  });

  it('never starts a member a claim holds, one being deleted, or one whose last run is still going down', () => {
    const result = plan(
      [
        ['devpool-1', { power: 'stopped' }, { holder: 'bob' }],
        ['devpool-2', { deleting: true }],
        ['devpool-3', { power: 'stopping' }],
        ['devpool-4', { power: 'stopped' }, { holder: 'corral-vdi/resize' }],
        ['devpool-5', { power: 'stopped' }, { holder: 'carol', expired: true }],
      ],
      3,
    );
    expect(result).toEqual({ ready: [], start: [], stop: [], unmark: [], short: 3 });
  });

  it('never starts more than the pool has, and says how many spares are missing', () => {
    expect(
      plan(
        [
          ['devpool-1', {}],
          ['devpool-2', { holder: 'bob', power: 'running' }, { holder: 'bob' }],
        ],
        2,
      ),
    ).toEqual({ ready: [], start: ['devpool-1'], stop: [], unmark: [], short: 1 });
  });

  it('starts no more than the devices have room for', () => {
    expect(
      plan(
        [
          ['devpool-1', {}],
          ['devpool-2', {}],
          ['devpool-3', {}],
        ],
        3,
        { fits: 1 },
      ),
    ).toMatchObject({
      start: ['devpool-1'],
      short: 2,
    });
  });

  it('stops marked spares beyond minReady, highest first, and never an unmarked running member', () => {
    const result = plan(
      [
        ['devpool-1', { power: 'running', spare: true }],
        ['devpool-2', { power: 'running' }],
        ['devpool-3', { power: 'running', spare: true }],
        ['devpool-4', { power: 'starting', spare: true }],
      ],
      1,
    );
    expect(result).toMatchObject({ start: [], stop: ['devpool-4', 'devpool-3', 'devpool-1'], short: 0 });
    const unmarked = plan(
      [
        ['devpool-1', { power: 'running' }],
        ['devpool-2', { power: 'running' }],
      ],
      0,
    );
    expect(unmarked.stop).toEqual([]);
  });

  it('leaves a claimed spare running and drops its mark', () => {
    const result = plan(
      [['devpool-1', { power: 'running', spare: true, holder: 'alice' }, { holder: 'alice' }]],
      0,
    );
    expect(result).toEqual({ ready: [], start: [], stop: [], unmark: ['devpool-1'], short: 0 });
  });

  it('takes a spare whose stop Lease a dead keeper left once it expired, and not before', () => {
    const held = plan([['devpool-1', { power: 'running', spare: true }, { holder: 'corral-vdi/resize' }]], 0);
    expect(held).toEqual({ ready: [], start: [], stop: [], unmark: [], short: 0 });
    const expired = plan(
      [['devpool-1', { power: 'running', spare: true }, { holder: 'corral-vdi/resize', expired: true }]],
      0,
    );
    expect(expired.stop).toEqual(['devpool-1']);
  });

  it('refuses a minReady or a room that is not a whole number of at least 0', () => {
    for (const [minReady, fits] of [
      [-1, undefined],
      [1.5, undefined],
      [Number.NaN, undefined],
      [1, -2],
    ] as const) {
      const error = thrownBy(() => plan([['devpool-1', {}]], minReady, { fits }));
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    }
  });

  it('keeps the free running members at minReady after its plan is carried out, whatever the pool', () => {
    const shape = fc.record({
      power: fc.constantFrom<MemberFacts['power']>('running', 'starting', 'stopped', 'stopping'),
      spare: fc.boolean(),
      held: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(shape, { maxLength: 12 }), fc.nat(14), (shapes, wanted) => {
        const minReady = Math.min(wanted, shapes.length);
        const pool: Pool = shapes.map((entry, index) => [
          names(shapes.length)[index] ?? '',
          { power: entry.power, spare: entry.spare, ...(entry.held ? { holder: 'bob' } : {}) },
          ...(entry.held ? [{ holder: 'bob' }] : []),
        ]) as Pool;
        const result = plan(pool, minReady);
        const free = shapes.filter((entry) => !entry.held);
        const ready = free.filter((entry) => entry.power === 'running' || entry.power === 'starting').length;
        const after = ready + result.start.length - result.stop.length;
        const stoppedFree = free.filter((entry) => entry.power === 'stopped').length;
        const markedWarm = free.filter(
          (entry) => entry.spare && (entry.power === 'running' || entry.power === 'starting'),
        ).length;
        // up to minReady as far as stopped members allow; down to it as far as marked spares allow
        expect(after).toBe(
          ready < minReady ? Math.min(minReady, ready + stoppedFree) : Math.max(minReady, ready - markedWarm),
        );
        expect(result.short).toBe(Math.max(0, minReady - ready - result.start.length));
        for (const name of result.stop)
          expect(pool.find(([member]) => member === name)?.[1].spare).toBe(true);
        for (const name of [...result.start, ...result.stop])
          expect(pool.find(([member]) => member === name)?.[2]).toBeUndefined();
      }),
    );
  });
});

describe('validateMinReady', () => {
  it('takes a whole number from 0 to the size', () => {
    expect(validateMinReady(0, 3)).toBe(0);
    expect(validateMinReady(3, 3)).toBe(3);
  });

  it.each([[4], [-1], [1.5], ['2'], [Number.NaN], [undefined]])('refuses %s for a pool of 3', (value) => {
    const error = thrownBy(() => validateMinReady(value, 3));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
  });
});
