import { VdiError } from './errors.js';
import { shortHash, shortHashLength } from './hash.js';
import { leaseNamePrefix } from './keys.js';
import { isValidVmName, maxSubdomainLength } from './validate.js';

// longest member whose Lease name needs no hash; 253 itself is reserved for hashed names
const maxPlainMemberLength = maxSubdomainLength - 1 - leaseNamePrefix.length;
const keptMemberLength = maxSubdomainLength - leaseNamePrefix.length - 1 - shortHashLength;

/**
 * The name of the Lease that holds the claim on `member`: `corral-vdi-<member>`.
 *
 * A member name longer than 241 characters would overflow the 253 characters a Lease name may have. Such a
 * member gets `corral-vdi-` + its first 231 characters + `-` + a 10-character hash of the whole name, which is
 * exactly 253 characters long; plain names are at most 252, so the two forms never meet.
 *
 * @example
 * ```ts
 * leaseNameFor('devpool-1'); // 'corral-vdi-devpool-1'
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `member` is not a valid VM name.
 * @category claims
 */
export function leaseNameFor(member: string): string {
  let name = namedLeases.get(member);
  if (name === undefined) {
    name = nameLease(member);
    if (namedLeases.size >= maxNamedLeases) namedLeases.clear();
    namedLeases.set(member, name);
  }
  return name;
}

// a claim plans over its whole pool and names every member's Lease each time: the names of a few pools are kept
const maxNamedLeases = 10_000;
const namedLeases = new Map<string, string>();

function nameLease(member: string): string {
  if (!isValidVmName(member)) {
    throw new VdiError(
      'INVALID_INPUT',
      `"${member}" is not a valid VM name; a member name is a DNS-1123 subdomain of at most ${maxSubdomainLength} characters.`,
      { details: { member } },
    );
  }
  if (member.length <= maxPlainMemberLength) return `${leaseNamePrefix}${member}`;
  // a cut that ends in "." would leave ".-", which a subdomain forbids
  const kept = member.slice(0, keptMemberLength).replace(/\.$/, '-');
  return `${leaseNamePrefix}${kept}-${shortHash(member)}`;
}

/**
 * The member a Lease name belongs to, or `undefined` when the name is not a claim Lease's or is the hashed form
 * of a long member name, which cannot be reversed. For those, find the member the other way round: list the
 * pool's VMs and compare {@link leaseNameFor} of each.
 *
 * @example
 * ```ts
 * memberFromLeaseName('corral-vdi-devpool-1'); // 'devpool-1'
 * memberFromLeaseName('kube-scheduler'); // undefined
 * ```
 * @category claims
 */
export function memberFromLeaseName(name: string): string | undefined {
  if (!name.startsWith(leaseNamePrefix)) return undefined;
  const member = name.slice(leaseNamePrefix.length);
  if (member.length > maxPlainMemberLength || !isValidVmName(member)) return undefined;
  return member;
}
