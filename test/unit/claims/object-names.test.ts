import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isValidVmName, maxPoolNameLength, validatePoolName } from '../../../src/claims/object-names.js';
import { isValidLabelValue } from '../../../src/claims/sanitize-label-value.js';
import { isVdiError } from '../../../src/errors.js';
import { thrownBy } from './thrown-by.js';

describe('isValidVmName', () => {
  it.each([
    ['devpool-1', true],
    ['a', true],
    ['web.prod-2.x', true],
    ['a'.repeat(253), true],
    ['a'.repeat(254), false],
    ['', false],
    ['DevPool-1', false],
    ['devpool_1', false],
    ['-devpool', false],
    ['devpool-', false],
    ['a..b', false],
    ['a.-b', false],
    ['a-.b', false],
    ['.a', false],
  ])('judges %j valid: %s', (name, valid) => {
    expect(isValidVmName(name)).toBe(valid);
  });
});

describe('validatePoolName', () => {
  it.each(['devpool', 'a', 'gpu-pool-2', 'p'.repeat(maxPoolNameLength)])('accepts %j', (name) => {
    expect(() => validatePoolName(name)).not.toThrow();
  });

  it.each([
    ['', /1 to 50 characters/],
    ['p'.repeat(maxPoolNameLength + 1), /1 to 50 characters/],
    ['DevPool', /lowercase letters, digits and "-"/],
    ['dev.pool', /lowercase letters, digits and "-"/],
    ['dev_pool', /lowercase letters, digits and "-"/],
    ['-devpool', /starting and ending with a letter or digit/],
    ['devpool-', /starting and ending with a letter or digit/],
  ])('rejects %j with INVALID_INPUT and a message that says the rule', (name, message) => {
    const error = thrownBy(() => validatePoolName(name));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it('lets every accepted pool name make member names that are VM names and label values', () => {
    const poolName = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$/);
    fc.assert(
      fc.property(poolName, fc.integer({ min: 1, max: 999_999_999_999 }), (pool, index) => {
        validatePoolName(pool);
        const member = `${pool}-${index}`;
        expect(isValidVmName(member)).toBe(true);
        expect(isValidLabelValue(member)).toBe(true);
      }),
    );
  });
});
