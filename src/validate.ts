import { z } from 'zod';
import { VdiError } from './errors.js';
import { parseDuration } from './parse-duration.js';

/** Longest name of an object that must be a DNS-1123 subdomain, such as a VM or a Lease. @category validate */
export const maxSubdomainLength = 253;
/** Longest namespace name: a DNS-1123 label. @category validate */
export const maxNamespaceLength = 63;
/**
 * Longest pool name. Members are named `<pool>-<n>`, and 50 leaves room for a `-<n>` of up to 12 characters
 * while the member name still fits a label value (63), as the Lease's member label needs.
 *
 * @category validate
 */
export const maxPoolNameLength = 50;
/** Longest identity the SDK accepts; longer ones are not logins. @category validate */
export const maxIdentityLength = 1024;

/** A DNS-1123 label: the form of namespace and pool names. @category validate */
export const dnsLabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A DNS-1123 subdomain: the form of VM and Lease names. @category validate */
export const subdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Whether `name` is a valid namespace name: a DNS-1123 label (lowercase letters, digits and `-`, starting and
 * ending with a letter or digit) of at most 63 characters.
 *
 * @example
 * ```ts
 * isValidNamespace('corral-vms'); // true
 * ```
 * @category validate
 */
export function isValidNamespace(name: string): boolean {
  return name.length <= maxNamespaceLength && dnsLabelPattern.test(name);
}

/**
 * Whether `name` is a valid VirtualMachine name: a DNS-1123 subdomain (lowercase letters, digits, `-` and `.`,
 * each dot-separated part starting and ending with a letter or digit) of at most 253 characters.
 *
 * @example
 * ```ts
 * isValidVmName('devpool-1'); // true
 * isValidVmName('DevPool_1'); // false
 * ```
 * @category validate
 */
export function isValidVmName(name: string): boolean {
  return name.length <= maxSubdomainLength && subdomainPattern.test(name);
}

/**
 * Whether `name` is a valid pool name: a DNS-1123 label of 1 to {@link maxPoolNameLength} characters.
 *
 * @example
 * ```ts
 * isValidPoolName('devpool'); // true
 * ```
 * @category validate
 */
export function isValidPoolName(name: string): boolean {
  return name.length > 0 && name.length <= maxPoolNameLength && dnsLabelPattern.test(name);
}

/** What is wrong with a name, as a sentence that says what to pass instead; `undefined` when nothing is. */
type Problem = (value: string) => string | undefined;

const namespaceProblem: Problem = (name) =>
  isValidNamespace(name) ? undefined : `"${name}" is not a valid namespace name (a DNS-1123 label).`;

const poolNameProblem: Problem = (name) => {
  if (isValidPoolName(name)) return undefined;
  if (name.length === 0 || name.length > maxPoolNameLength) {
    return `Pool name "${name}" is ${name.length} characters long; use 1 to ${maxPoolNameLength} characters, for example "devpool".`;
  }
  return `Pool name "${name}" is not valid; use lowercase letters, digits and "-", starting and ending with a letter or digit, for example "devpool".`;
};

const memberNameProblem: Problem = (name) =>
  isValidVmName(name) ? undefined : `"${name}" is not a valid member name; pass a VM name such as devpool-1.`;

const goldenNameProblem: Problem = (name) =>
  isValidVmName(name)
    ? undefined
    : `"${name}" is not a valid VM name; pass the name of the golden VM to clone.`;

const identityProblem: Problem = (identity) =>
  identity.trim() === '' || identity.length > maxIdentityLength || identity.trim() !== identity
    ? `The identity must be 1 to ${maxIdentityLength} characters without surrounding spaces; pass the login the request pipeline authenticated.`
    : undefined;

function check(problem: Problem, value: string, details: Record<string, unknown>): void {
  const message = problem(value);
  if (message !== undefined) throw new VdiError('INVALID_INPUT', message, { details });
}

/**
 * Checks a namespace name and returns it.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when it is not a DNS-1123 label.
 * @category validate
 */
export function validateNamespace(name: string): string {
  check(namespaceProblem, name, { namespace: name });
  return name;
}

/**
 * Checks a pool name. A pool name is the value of the `corral.dev/vdi-pool` label and the stem of its member
 * names `<pool>-<n>`, so it must be a DNS-1123 label of at most {@link maxPoolNameLength} characters.
 *
 * @example
 * ```ts
 * validatePoolName('devpool'); // passes
 * validatePoolName('Dev Pool'); // throws VdiError INVALID_INPUT
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when the name breaks these rules; the message says which one.
 * @category validate
 */
export function validatePoolName(name: string): void {
  check(poolNameProblem, name, { pool: name, maxLength: maxPoolNameLength });
}

/**
 * Checks a member name: a VM name such as `devpool-1`.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when it is not a VM name.
 * @category validate
 */
export function validateMemberName(name: string): void {
  check(memberNameProblem, name, { member: name });
}

/**
 * Checks the name of a golden VM to clone.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when it is not a VM name.
 * @category validate
 */
export function validateGoldenName(name: string): void {
  check(goldenNameProblem, name, { golden: name });
}

/**
 * Checks an identity: 1 to {@link maxIdentityLength} characters, not blank, no surrounding whitespace.
 *
 * @throws {@link VdiError} `INVALID_INPUT` otherwise.
 * @category validate
 */
export function validateIdentity(identity: string): void {
  check(identityProblem, identity, {});
}

/**
 * Checks a claim a backend is asked to present on a member: an exact identity and an RFC 3339 time.
 *
 * @throws {@link VdiError} `INVALID_INPUT`.
 * @category validate
 */
export function validateClaimToPresent(claim: { holder: string; claimedAt: string }): void {
  validateIdentity(claim.holder);
  if (Number.isNaN(Date.parse(claim.claimedAt))) {
    throw new VdiError(
      'INVALID_INPUT',
      `"${claim.claimedAt}" is not an RFC 3339 time; pass the Lease's acquireTime.`,
      {
        details: { claimedAt: claim.claimedAt },
      },
    );
  }
}

function schemaOf(problem: Problem) {
  return z.string().superRefine((value, ctx) => {
    const message = problem(value);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message });
  });
}

/** A namespace name, for option bags, flags and request bodies. @category validate */
// Pure, so a page that imports one function of ./core bundles none of these schemas and no zod.
export const namespaceSchema = /* @__PURE__ */ schemaOf(namespaceProblem);
/** A pool name. @category validate */
export const poolNameSchema = /* @__PURE__ */ schemaOf(poolNameProblem);
/** A member (VM) name. @category validate */
export const memberNameSchema = /* @__PURE__ */ schemaOf(memberNameProblem);
/** The name of a golden VM. @category validate */
export const goldenNameSchema = /* @__PURE__ */ schemaOf(goldenNameProblem);
/** An identity, as the request pipeline authenticated it. @category validate */
export const identitySchema = /* @__PURE__ */ schemaOf(identityProblem);
/** A duration such as `15m` or `1h30m` (see `parseDuration`), parsed to milliseconds. @category validate */
export const durationSchema = /* @__PURE__ */ z.string().transform((text, ctx) => {
  try {
    return parseDuration(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

/**
 * Parses an options object with a schema, turning zod's issues into one `INVALID_INPUT` that names the fields.
 *
 * @example
 * ```ts
 * const { pool } = parseOptions(z.object({ pool: poolNameSchema }), options, 'claim');
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` with `details.issues`, one `field: problem` line each.
 * @category validate
 */
export function parseOptions<T>(schema: z.ZodType<T>, value: unknown, call: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'options'}: ${issue.message}`);
  throw new VdiError('INVALID_INPUT', `${call} was called with bad options (${issues.join('; ')}).`, {
    details: { issues },
  });
}
