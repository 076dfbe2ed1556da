const fnvOffsetBasis = 0xcbf29ce484222325n;
const fnvPrime = 0x100000001b3n;
const mask64 = 0xffffffffffffffffn;

/** Length of {@link shortHash}'s result. @category claims */
export const shortHashLength = 10;
const shortHashModulus = 36n ** BigInt(shortHashLength);

/**
 * The 64-bit FNV-1a hash of the UTF-8 bytes of `text`, in pure JavaScript so that it runs in a browser too.
 * Lone surrogates are encoded as their three-byte form, so different strings always hash different bytes.
 *
 * @example
 * ```ts
 * fnv1a64('foobar').toString(16); // '85944171f73967e8'
 * ```
 * @category claims
 */
export function fnv1a64(text: string): bigint {
  let hash = fnvOffsetBasis;
  for (const byte of utf8Bytes(text)) {
    hash = ((hash ^ BigInt(byte)) * fnvPrime) & mask64;
  }
  return hash;
}

/**
 * A short, deterministic, lowercase base-36 digest of `text` ({@link shortHashLength} characters, about 51 bits),
 * used as a suffix where a name or label value must be shortened without colliding.
 *
 * @example
 * ```ts
 * shortHash('alice@example.com'); // ten characters of [0-9a-z]
 * ```
 * @category claims
 */
export function shortHash(text: string): string {
  return (fnv1a64(text) % shortHashModulus).toString(36).padStart(shortHashLength, '0');
}

function* utf8Bytes(text: string): Generator<number> {
  for (let index = 0; index < text.length; index++) {
    let code = text.charCodeAt(index);
    const next = text.charCodeAt(index + 1);
    if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
      index++;
    }
    if (code < 0x80) {
      yield code;
    } else if (code < 0x800) {
      yield 0xc0 | (code >> 6);
      yield 0x80 | (code & 0x3f);
    } else if (code < 0x10000) {
      yield 0xe0 | (code >> 12);
      yield 0x80 | ((code >> 6) & 0x3f);
      yield 0x80 | (code & 0x3f);
    } else {
      yield 0xf0 | (code >> 18);
      yield 0x80 | ((code >> 12) & 0x3f);
      yield 0x80 | ((code >> 6) & 0x3f);
      yield 0x80 | (code & 0x3f);
    }
  }
}
