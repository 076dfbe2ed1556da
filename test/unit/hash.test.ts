import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fnv1a64, shortHash, shortHashLength } from '../../src/hash.js';

function referenceFnv1a64(bytes: Uint8Array): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of bytes) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return hash;
}

describe('fnv1a64', () => {
  it.each([
    ['', 'cbf29ce484222325'],
    ['a', 'af63dc4c8601ec8c'],
    ['foobar', '85944171f73967e8'],
  ])('hashes %j to the published FNV-1a 64-bit value %s', (text, hex) => {
    expect(fnv1a64(text).toString(16)).toBe(hex);
  });

  it('hashes the UTF-8 bytes of any well-formed string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(fnv1a64(text)).toBe(referenceFnv1a64(new TextEncoder().encode(text)));
      }),
    );
  });

  it('tells apart strings that differ only in a lone surrogate', () => {
    expect(fnv1a64('a\ud800')).not.toBe(fnv1a64('a\ud801'));
    expect(fnv1a64('a\ud800')).not.toBe(fnv1a64('a\ufffd'));
  });
});

describe('shortHash', () => {
  it('is always ten lowercase base-36 characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(shortHash(text)).toMatch(new RegExp(`^[0-9a-z]{${shortHashLength}}$`));
      }),
    );
  });

  it('gives different digests for the first thousand numbered names', () => {
    const digests = new Set(Array.from({ length: 1000 }, (_, index) => shortHash(`devpool-${index}`)));
    expect(digests.size).toBe(1000);
  });
});
