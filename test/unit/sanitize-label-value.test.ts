import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { shortHash } from '../../src/hash.js';
import { isValidLabelValue, sanitizeLabelValue } from '../../src/sanitize-label-value.js';
import { thrownBy } from './claims/thrown-by.js';

const oidcIssuer = 'https://login.example.com/realms/corporate-directory';
const identity = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
  fc.string({ unit: fc.constantFrom('a', 'Z', '0', '-', '_', '.', '@', ':', '/', '|'), minLength: 1 }),
  fc.tuple(fc.webUrl(), fc.uuid()).map(([issuer, subject]) => `${issuer}|${subject}`),
  fc.emailAddress(),
);

describe('isValidLabelValue', () => {
  it.each([
    ['', true],
    ['a', true],
    ['alice_example.com', true],
    ['A-b_c.9', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    ['alice@example.com', false],
    ['-alice', false],
    ['alice.', false],
    ['_', false],
    ['al ice', false],
    ['ålice', false],
  ])('judges %j valid: %s', (value, valid) => {
    expect(isValidLabelValue(value)).toBe(valid);
  });
});

describe('sanitizeLabelValue', () => {
  it.each([
    ['alice', 'alice'],
    ['alice@example.com', 'alice_example.com'],
    ['alice@github', 'alice_github'],
    ['Bob.Smith-2', 'Bob.Smith-2'],
    ['alice_example.com', 'alice_example.com'],
    ['x'.repeat(63), 'x'.repeat(63)],
  ])('keeps %j readable as %j', (input, expected) => {
    expect(sanitizeLabelValue(input)).toBe(expected);
  });

  it.each([
    [
      'an OIDC issuer and subject',
      `${oidcIssuer}|248289761001`,
      'https___login.example.com_realms_corporate-directory',
    ],
    ['a name with a space', 'Alice Smith', 'Alice_Smith'],
    ['a leading @', '@alice', 'alice'],
    ['a trailing dot', 'alice.', 'alice'],
    ['non-ASCII letters', 'jürgen@example.de', 'j_rgen_example.de'],
    ['an identity longer than 63 characters', 'a'.repeat(64), 'a'.repeat(52)],
  ])('shortens or rewrites %s and adds the hash of the whole identity', (_case, input, kept) => {
    expect(sanitizeLabelValue(input)).toBe(`${kept}-${shortHash(input)}`);
  });

  it.each(['@', '@@@', '|||', '🙂', '-_.'])(
    'turns %j, which has no letter or digit, into the hash alone',
    (input) => {
      expect(sanitizeLabelValue(input)).toBe(shortHash(input));
    },
  );

  it.each([
    ['empty', ''],
    ['longer than 1024 characters', 'a'.repeat(1025)],
  ])('rejects an identity that is %s with INVALID_INPUT', (_case, input) => {
    expect(
      isVdiError(
        thrownBy(() => sanitizeLabelValue(input)),
        'INVALID_INPUT',
      ),
    ).toBe(true);
  });

  it('accepts an identity of exactly 1024 characters', () => {
    expect(isValidLabelValue(sanitizeLabelValue('a'.repeat(1024)))).toBe(true);
  });

  it('always returns a non-empty valid label value', () => {
    fc.assert(
      fc.property(identity, (input) => {
        const value = sanitizeLabelValue(input);
        expect(value).not.toBe('');
        expect(isValidLabelValue(value)).toBe(true);
      }),
    );
  });

  it('returns the same value for the same identity', () => {
    fc.assert(
      fc.property(identity, (input) => {
        expect(sanitizeLabelValue(input)).toBe(sanitizeLabelValue(`${input}`));
      }),
    );
  });

  it('returns an identity that already is a valid label value unchanged', () => {
    const labelValue = fc
      .string({ unit: fc.constantFrom('a', 'B', '7', '-', '_', '.'), minLength: 1, maxLength: 63 })
      .filter((value) => isValidLabelValue(value));
    fc.assert(
      fc.property(labelValue, (value) => {
        expect(sanitizeLabelValue(value)).toBe(value);
      }),
    );
  });

  it('gives distinct long identities distinct values', () => {
    const longIdentity = fc.string({ unit: 'binary', minLength: 64, maxLength: 300 });
    fc.assert(
      fc.property(longIdentity, longIdentity, (first, second) => {
        fc.pre(first !== second);
        expect(sanitizeLabelValue(first)).not.toBe(sanitizeLabelValue(second));
      }),
    );
  });

  it('gives long identities with a shared 63-character prefix distinct values', () => {
    const prefix = `${oidcIssuer}|`;
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{6,20}$/), fc.stringMatching(/^[0-9]{6,20}$/), (first, second) => {
        fc.pre(first !== second);
        expect(sanitizeLabelValue(prefix + first)).not.toBe(sanitizeLabelValue(prefix + second));
      }),
    );
  });

  it('gives identities that differ in more than @ and _ distinct values', () => {
    fc.assert(
      fc.property(identity, identity, (first, second) => {
        fc.pre(first.replaceAll('@', '_') !== second.replaceAll('@', '_'));
        expect(sanitizeLabelValue(first)).not.toBe(sanitizeLabelValue(second));
      }),
    );
  });
});
