import { VdiError } from './errors.js';
import { shortHash, shortHashLength } from './hash.js';
import { maxIdentityLength } from './validate.js';

/** Longest label value the apiserver accepts. @category claims */
export const maxLabelValueLength = 63;

const labelValuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const labelValueCharacter = /^[-A-Za-z0-9_.]$/;
const alphanumeric = /[A-Za-z0-9]/;
// room for the separator and the hash
const maxKeptLength = maxLabelValueLength - 1 - shortHashLength;

/**
 * Whether `value` is a valid Kubernetes label value, by the apiserver's rule: at most 63 characters of
 * `[A-Za-z0-9-_.]`, starting and ending with a letter or digit. The empty string is valid.
 *
 * @example
 * ```ts
 * isValidLabelValue('alice_example.com'); // true
 * isValidLabelValue('alice@example.com'); // false
 * ```
 * @category claims
 */
export function isValidLabelValue(value: string): boolean {
  return value.length <= maxLabelValueLength && labelValuePattern.test(value);
}

/**
 * The label-safe copy of an identity, for the `corral.dev/vdi-assigned-to` label. The exact identity goes in the
 * annotation of the same name; the label only lets `kubectl -l` and selectors find a user's desktops, so
 * readers must confirm a match against the annotation.
 *
 * The rules, applied in order:
 * 1. `@` becomes `_`. If that gives a valid label value, it is the result: `alice@example.com` becomes
 *    `alice_example.com`, and an identity that already is a valid label value comes back unchanged.
 * 2. Otherwise (the identity is longer than 63 characters, holds other characters outside `[A-Za-z0-9-_.]`, or
 *    starts or ends with a symbol) each such character becomes `_`, leading and trailing symbols are dropped, the
 *    rest is cut to 52 characters and `-` plus a 10-character hash of the whole identity is appended. An identity
 *    with no letter or digit becomes the hash alone.
 *
 * So two identities share a label value when they differ solely by `@` against `_` in the same places
 * (`a@b` and `a_b`), when one is itself shaped like the other's shortened value, or, with negligible
 * probability, when their hashes collide. The label is a lookup aid, never proof of who holds a desktop.
 *
 * @example
 * ```ts
 * sanitizeLabelValue('alice@github'); // 'alice_github'
 * sanitizeLabelValue('https://login.example.com|0b9f'); // 'https___login.example.com_0b9f-' + 10 hash characters
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the identity is empty or longer than 1024 characters.
 * @category claims
 */
export function sanitizeLabelValue(identity: string): string {
  if (identity.length === 0 || identity.length > maxIdentityLength) {
    throw new VdiError(
      'INVALID_INPUT',
      `An identity must be 1 to ${maxIdentityLength} characters long, got ${identity.length}; pass the login the request pipeline authenticated.`,
      { details: { length: identity.length } },
    );
  }
  const withoutAt = identity.replaceAll('@', '_');
  if (isValidLabelValue(withoutAt)) return withoutAt;

  const hash = shortHash(identity);
  let kept = '';
  for (const character of withoutAt) {
    kept += labelValueCharacter.test(character) ? character : '_';
  }
  kept = trimToAlphanumeric(kept);
  kept = trimToAlphanumeric(kept.slice(0, maxKeptLength));
  return kept === '' ? hash : `${kept}-${hash}`;
}

function trimToAlphanumeric(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && !alphanumeric.test(value.charAt(start))) start++;
  while (end > start && !alphanumeric.test(value.charAt(end - 1))) end--;
  return value.slice(start, end);
}
