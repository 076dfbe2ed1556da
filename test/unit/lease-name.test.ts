import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { shortHash } from '../../src/hash.js';
import { leaseNameFor, memberFromLeaseName } from '../../src/lease-name.js';
import { isValidVmName } from '../../src/validate.js';
import { thrownBy } from './claims/thrown-by.js';

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
const vmName = fc
  .array(dnsLabel, { minLength: 1, maxLength: 8 })
  .map((labels) =>
    labels
      .join('.')
      .slice(0, 253)
      .replace(/[-.]+$/, ''),
  )
  .filter((name) => isValidVmName(name));
const longVmName = fc
  .array(fc.stringMatching(/^[a-z0-9][-a-z0-9]{59,61}[a-z0-9]$/), { minLength: 4, maxLength: 4 })
  .map((labels) =>
    labels
      .join('.')
      .slice(0, 253)
      .replace(/[-.]+$/, ''),
  )
  .filter((name) => name.length > 241);

describe('leaseNameFor', () => {
  it.each([
    ['devpool-1', 'corral-vdi-devpool-1'],
    ['a', 'corral-vdi-a'],
    ['web.prod-2', 'corral-vdi-web.prod-2'],
    ['m'.repeat(241), `corral-vdi-${'m'.repeat(241)}`],
  ])('names the Lease of %j %j', (member, lease) => {
    expect(leaseNameFor(member)).toBe(lease);
  });

  it('shortens a member name longer than 241 characters to exactly 253 with a hash of the whole name', () => {
    const member = 'm'.repeat(242);
    expect(leaseNameFor(member)).toBe(`corral-vdi-${'m'.repeat(231)}-${shortHash(member)}`);
    expect(leaseNameFor(member)).toHaveLength(253);
  });

  it('does not leave a dot before the hash when the cut ends on a dot', () => {
    const member = `${'m'.repeat(230)}.${'n'.repeat(22)}`;
    expect(leaseNameFor(member)).toBe(`corral-vdi-${'m'.repeat(230)}--${shortHash(member)}`);
    expect(isValidVmName(leaseNameFor(member))).toBe(true);
  });

  it.each(['', 'DevPool-1', 'dev_pool', 'a'.repeat(254)])(
    'rejects the invalid VM name %j with INVALID_INPUT',
    (member) => {
      expect(
        isVdiError(
          thrownBy(() => leaseNameFor(member)),
          'INVALID_INPUT',
        ),
      ).toBe(true);
    },
  );

  it('makes a valid Lease name for every valid VM name', () => {
    fc.assert(
      fc.property(fc.oneof(vmName, longVmName), (member) => {
        const name = leaseNameFor(member);
        expect(isValidVmName(name)).toBe(true);
        expect(name.startsWith('corral-vdi-')).toBe(true);
      }),
    );
  });

  it('gives distinct long member names distinct Lease names', () => {
    fc.assert(
      fc.property(longVmName, longVmName, (first, second) => {
        fc.pre(first !== second);
        expect(leaseNameFor(first)).not.toBe(leaseNameFor(second));
      }),
    );
  });
});

describe('memberFromLeaseName', () => {
  it.each([
    ['corral-vdi-devpool-1', 'devpool-1'],
    ['corral-vdi-web.prod-2', 'web.prod-2'],
    ['corral-vdi-', undefined],
    ['corral-vdi--x', undefined],
    ['kube-scheduler', undefined],
    ['corral-vdi', undefined],
  ])('reads %j as member %j', (lease, member) => {
    expect(memberFromLeaseName(lease)).toBe(member);
  });

  it('does not reverse the hashed Lease name of a long member', () => {
    expect(memberFromLeaseName(leaseNameFor('m'.repeat(242)))).toBeUndefined();
  });

  it('inverts leaseNameFor for every member name of at most 241 characters', () => {
    fc.assert(
      fc.property(
        vmName.filter((name) => name.length <= 241),
        (member) => {
          expect(memberFromLeaseName(leaseNameFor(member))).toBe(member);
        },
      ),
    );
  });
});
