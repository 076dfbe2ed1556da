import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isVdiError, type VdiError } from '../../src/errors.js';
import { isValidLabelValue } from '../../src/sanitize-label-value.js';
import {
  durationSchema,
  goldenNameSchema,
  identitySchema,
  isValidNamespace,
  isValidVmName,
  maxIdentityLength,
  maxPoolNameLength,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateGoldenName,
  validateIdentity,
  validateMemberName,
  validateNamespace,
  validatePoolName,
} from '../../src/validate.js';
import { thrownBy } from './claims/thrown-by.js';

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

describe('isValidNamespace and validateNamespace', () => {
  it.each([
    ['corral-vms', true],
    ['a', true],
    ['n'.repeat(63), true],
    ['n'.repeat(64), false],
    ['', false],
    ['Corral', false],
    ['corral.vms', false],
    ['-corral', false],
    ['corral-', false],
    ['corral_vms', false],
  ])('judges %j valid: %s', (name, valid) => {
    expect(isValidNamespace(name)).toBe(valid);
    const error = thrownBy(() => validateNamespace(name));
    if (valid) expect(error).toBeUndefined();
    else {
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
      expect((error as VdiError).message).toBe(`"${name}" is not a valid namespace name (a DNS-1123 label).`);
      expect((error as VdiError).details).toEqual({ namespace: name });
    }
  });

  it('returns the name it checked', () => {
    expect(validateNamespace('corral-vms')).toBe('corral-vms');
  });
});

describe('the checks of members, golden VMs and identities', () => {
  it.each<[string, (value: string) => void, string, RegExp | undefined]>([
    ['member', validateMemberName, 'devpool-1', undefined],
    ['member', validateMemberName, 'Dev_Pool', /not a valid member name; pass a VM name such as devpool-1/],
    ['golden VM', validateGoldenName, 'golden-desktop', undefined],
    ['golden VM', validateGoldenName, 'golden desktop', /pass the name of the golden VM to clone/],
    ['identity', validateIdentity, 'alice@example.com', undefined],
    ['identity', validateIdentity, 'https://login.example.com|0b9f', undefined],
    ['identity', validateIdentity, '', /1 to 1024 characters without surrounding spaces/],
    ['identity', validateIdentity, '   ', /1 to 1024 characters without surrounding spaces/],
    ['identity', validateIdentity, ' alice', /1 to 1024 characters without surrounding spaces/],
    ['identity', validateIdentity, 'a'.repeat(maxIdentityLength), undefined],
    ['identity', validateIdentity, 'a'.repeat(maxIdentityLength + 1), /1 to 1024 characters/],
  ])('checks a %s %j', (_what, check, value, message) => {
    const error = thrownBy(() => check(value));
    if (message === undefined) expect(error).toBeUndefined();
    else {
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
      expect((error as Error).message).toMatch(message);
    }
  });
});

describe('the schemas', () => {
  it.each<[string, z.ZodType<unknown>, (value: string) => unknown, string[]]>([
    ['namespaceSchema', namespaceSchema, validateNamespace, ['corral-vms', 'Corral', '', 'n'.repeat(64)]],
    ['poolNameSchema', poolNameSchema, validatePoolName, ['devpool', 'Dev Pool', '', 'p'.repeat(51)]],
    ['memberNameSchema', memberNameSchema, validateMemberName, ['devpool-1', 'devpool_1', '.a']],
    ['goldenNameSchema', goldenNameSchema, validateGoldenName, ['golden', 'Golden']],
    ['identitySchema', identitySchema, validateIdentity, ['alice', ' alice', '']],
  ])('%s accepts what its check accepts and says what the check says', (_name, schema, check, values) => {
    for (const value of values) {
      const error = thrownBy(() => check(value)) as Error | undefined;
      const parsed = schema.safeParse(value);
      expect(parsed.success).toBe(error === undefined);
      if (!parsed.success)
        expect(parsed.error.issues.map((issue) => issue.message)).toEqual([error?.message]);
    }
  });

  it.each<[string, number | undefined]>([
    ['15m', 900_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['0', 0],
    ['15min', undefined],
    ['', undefined],
  ])('durationSchema reads %j as %s ms', (text, ms) => {
    const parsed = durationSchema.safeParse(text);
    expect(parsed.success ? parsed.data : undefined).toBe(ms);
    if (!parsed.success)
      expect(parsed.error.issues[0]?.message).toMatch(/^Duration ".*" .*; write numbers with units/);
  });
});

describe('parseOptions', () => {
  const schema = z.object({ pool: poolNameSchema, namespace: namespaceSchema.optional() });

  it('returns the parsed options', () => {
    expect(parseOptions(schema, { pool: 'devpool' }, 'claim')).toEqual({ pool: 'devpool' });
  });

  it.each<[string, unknown, string[]]>([
    ['a bad field', { pool: 'Dev Pool' }, ['pool: Pool name "Dev Pool" is not valid;']],
    [
      'two bad fields',
      { pool: '', namespace: 'X' },
      ['pool: Pool name "" is 0 characters long;', 'namespace: "X" is not a valid namespace name'],
    ],
    ['a missing field', {}, ['pool: ']],
    ['no object', undefined, ['options: ']],
  ])('refuses %s with INVALID_INPUT naming each field', (_case, value, starts) => {
    const error = thrownBy(() => parseOptions(schema, value, 'claim')) as VdiError;
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect(error.message).toMatch(/^claim was called with bad options \(/);
    const issues = error.details.issues as string[];
    expect(issues).toHaveLength(starts.length);
    starts.forEach((start, index) => {
      expect(issues[index]?.startsWith(start)).toBe(true);
    });
  });
});
