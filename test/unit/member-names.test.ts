import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNatural, memberIndexOf, memberNameFor, nextMemberNames } from '../../src/member-names.js';

describe('member names', () => {
  it.each([
    ['devpool-1', 1],
    ['devpool-10', 10],
    ['devpool-01', undefined],
    ['devpool-0', undefined],
    ['devpool-', undefined],
    ['devpool-x', undefined],
    ['otherpool-1', undefined],
    ['devpool-1-1', undefined],
  ])('reads the index of %s as %s', (name, index) => {
    expect(memberIndexOf('devpool', name)).toBe(index);
  });

  it('reads back every index it names', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999_999 }), (index) => {
        expect(memberIndexOf('devpool', memberNameFor('devpool', index))).toBe(index);
      }),
    );
  });

  it('sorts -2 before -10, as people count', () => {
    expect(['devpool-10', 'devpool-2', 'devpool-1', 'devpool-11'].sort(compareNatural)).toEqual([
      'devpool-1',
      'devpool-2',
      'devpool-10',
      'devpool-11',
    ]);
  });

  it('orders members by index whatever order they come in', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 100_000 }), { maxLength: 30 }), (indices) => {
        const sorted = indices.map((index) => memberNameFor('devpool', index)).sort(compareNatural);
        expect(sorted.map((name) => memberIndexOf('devpool', name))).toEqual(
          [...indices].sort((a, b) => a - b),
        );
      }),
    );
  });

  it('compares antisymmetrically and calls only equal names equal', () => {
    const name = fc.stringMatching(/^[a-z0-9-]{0,8}$/);
    fc.assert(
      fc.property(name, name, (left, right) => {
        expect(Math.sign(compareNatural(left, right)) + Math.sign(compareNatural(right, left))).toBe(0);
        expect(compareNatural(left, right) === 0).toBe(left === right);
      }),
    );
  });

  it('takes the lowest indices no VM holds', () => {
    expect(nextMemberNames('devpool', new Set(['devpool-1', 'devpool-3', 'other']), 3)).toEqual([
      'devpool-2',
      'devpool-4',
      'devpool-5',
    ]);
    expect(nextMemberNames('devpool', new Set(), 0)).toEqual([]);
  });
});
