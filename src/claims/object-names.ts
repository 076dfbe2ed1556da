import { VdiError } from '../errors.js';

/** Longest name of an object that must be a DNS-1123 subdomain, such as a VM or a Lease. @category claims */
export const maxSubdomainLength = 253;
/**
 * Longest pool name. Members are named `<pool>-<n>`, and 50 leaves room for a `-<n>` of up to 12 characters
 * while the member name still fits a label value (63), as the Lease's member label needs.
 *
 * @category claims
 */
export const maxPoolNameLength = 50;

const subdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dnsLabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Whether `name` is a valid VirtualMachine name: a DNS-1123 subdomain (lowercase letters, digits, `-` and `.`,
 * each dot-separated part starting and ending with a letter or digit) of at most 253 characters.
 *
 * @example
 * ```ts
 * isValidVmName('devpool-1'); // true
 * isValidVmName('DevPool_1'); // false
 * ```
 * @category claims
 */
export function isValidVmName(name: string): boolean {
  return name.length <= maxSubdomainLength && subdomainPattern.test(name);
}

/**
 * Checks a pool name. A pool name is the value of the `corral.dev/vdi-pool` label and the stem of its member
 * names `<pool>-<n>`, so it must be a DNS-1123 label (lowercase letters, digits and `-`, starting and ending
 * with a letter or digit) of at most {@link maxPoolNameLength} characters.
 *
 * @example
 * ```ts
 * validatePoolName('devpool'); // passes
 * validatePoolName('Dev Pool'); // throws VdiError INVALID_INPUT
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the name breaks these rules; the message says which one.
 * @category claims
 */
export function validatePoolName(name: string): void {
  if (name.length === 0 || name.length > maxPoolNameLength) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pool name "${name}" is ${name.length} characters long; use 1 to ${maxPoolNameLength} characters, for example "devpool".`,
      { details: { pool: name, maxLength: maxPoolNameLength } },
    );
  }
  if (!dnsLabelPattern.test(name)) {
    throw new VdiError(
      'INVALID_INPUT',
      `Pool name "${name}" is not valid; use lowercase letters, digits and "-", starting and ending with a letter or digit, for example "devpool".`,
      { details: { pool: name } },
    );
  }
}
