import type { ClaimLimitInput } from '../claim-policy.js';
import { classifyLease } from '../claims/claim-liveness.js';
import { VdiError } from '../errors.js';
import { type DesktopKind, formatDesktopId } from '../ids.js';
import { leaseKindLabel, leaseMemberLabel, leaseNamePrefix } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { memberFromLeaseName } from '../lease-name.js';

/** What {@link planUserLimit} looks at. @category limits */
export interface UserLimitInput {
  /** The claim Leases labeled with the identity's holder hash, of every pool and kind of the namespace. */
  leases: readonly LeaseObject[];
  identity: string;
  /** How many desktops the identity may hold; `undefined` sets no limit. */
  limit: number | undefined;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

/** What {@link planUserLimit} decides. @category limits */
export type UserLimitDecision =
  | { kind: 'allowed' }
  | { kind: 'refused'; code: 'USER_LIMIT_REACHED'; limit: number; held: string[] };

/**
 * The desktops an identity holds, by desktop ID in natural order: its live claim Leases, also those being
 * released, for a desktop is held until its release ends. A Lease another identity's holder hash collides with,
 * an expired one, and a waiter's Lease (another name) count for nothing.
 *
 * @example
 * ```ts
 * desktopsHeldBy({ leases, identity: 'alice', now: clock.now() }); // ['ct/corral-vms/devbox-1', 'vm/corral-vms/gpu-2']
 * ```
 * @category limits
 */
export function desktopsHeldBy(input: Omit<UserLimitInput, 'limit'>): string[] {
  const held = input.leases.flatMap((lease) => {
    const name = lease.metadata.name ?? '';
    if (!name.startsWith(leaseNamePrefix) || lease.spec.holderIdentity !== input.identity) return [];
    if (classifyLease(lease, input.now).kind !== 'held') return [];
    const labels = lease.metadata.labels ?? {};
    const member = labels[leaseMemberLabel] ?? memberFromLeaseName(name);
    if (member === undefined) return [];
    const kind: DesktopKind = labels[leaseKindLabel] === 'ct' ? 'ct' : 'vm';
    return [formatDesktopId({ kind, namespace: lease.metadata.namespace ?? '', member })];
  });
  return [...new Set(held)].sort();
}

/**
 * The limit in force when several apply (the broker's and the pool's): the lowest; `undefined` when none does.
 *
 * @example
 * ```ts
 * lowestLimit(3, undefined, 1); // 1
 * ```
 * @category limits
 */
export function lowestLimit(...limits: readonly (number | undefined)[]): number | undefined {
  const set = limits.filter((limit): limit is number => limit !== undefined);
  return set.length === 0 ? undefined : Math.min(...set);
}

/**
 * Whether an identity may take one more desktop: it holds fewer than `limit`. Ask it only for a claim that would
 * take a member; a claim that returns a desktop the identity already holds in the pool takes nothing more.
 *
 * @example
 * ```ts
 * const decision = planUserLimit({ leases, identity: 'alice', limit: 2, now: clock.now() });
 * if (decision.kind === 'refused') throw userLimitError('alice', decision);
 * ```
 * @category limits
 */
export function planUserLimit(input: UserLimitInput): UserLimitDecision {
  const { limit } = input;
  if (limit === undefined) return { kind: 'allowed' };
  const held = desktopsHeldBy(input);
  if (held.length < limit) return { kind: 'allowed' };
  return { kind: 'refused', code: 'USER_LIMIT_REACHED', limit, held };
}

/**
 * The error of a refusal by {@link planUserLimit}: `USER_LIMIT_REACHED`, naming the desktops held and what to do.
 *
 * @category limits
 */
export function userLimitError(
  identity: string,
  refusal: Extract<UserLimitDecision, { kind: 'refused' }>,
): VdiError {
  const { limit, held } = refusal;
  const desktops = limit === 1 ? 'one desktop' : `${limit} desktops`;
  return new VdiError(
    'USER_LIMIT_REACHED',
    `${identity} may hold ${desktops} at a time and holds ${held.join(', ')}; release one, then claim again.`,
    { details: { identity, limit, held } },
  );
}

/**
 * The per-user limit's answer to a claim that would take one more desktop (its part of the claim policy): the
 * `USER_LIMIT_REACHED` error when the identity holds its limit already, else `undefined`.
 *
 * @category limits
 */
export function refusedByLimit(input: ClaimLimitInput): VdiError | undefined {
  const decision = planUserLimit(input);
  return decision.kind === 'refused' ? userLimitError(input.identity, decision) : undefined;
}
