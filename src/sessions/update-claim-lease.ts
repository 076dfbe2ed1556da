import type { VdiContext } from '../context.js';
import { isConflictReason } from '../kube/errors.js';
import type { LeaseObject } from '../kube-objects.js';
import { type ClaimKey, claimKeyOf, isSameClaim } from './claim-key.js';

/** How a read-modify-write of a claim's Lease ended. */
export type LeaseUpdate = { kind: 'written'; lease: LeaseObject } | { kind: 'unchanged' } | { kind: 'gone' };

const conflictAttempts = 5;

/**
 * Read-modify-write of one claim's Lease, starting from `known` when given; a conflict re-reads it, and a Lease
 * of another claim (or none) is `gone`. `change` returns `undefined` when there is nothing to write.
 */
export async function updateClaimLease(
  ctx: VdiContext,
  input: { namespace: string; name: string; claim: ClaimKey; known?: LeaseObject | undefined },
  change: (lease: LeaseObject) => LeaseObject | undefined,
): Promise<LeaseUpdate> {
  const { namespace, name, claim } = input;
  let lease = input.known;
  for (let attempt = 1; ; attempt += 1) {
    lease ??= await ctx.cluster.getLease(namespace, name);
    if (!lease || !isSameClaim(claimKeyOf(lease), claim)) return { kind: 'gone' };
    const next = change(lease);
    if (!next) return { kind: 'unchanged' };
    try {
      return { kind: 'written', lease: await ctx.cluster.replaceLease(namespace, next) };
    } catch (error) {
      if (!isConflictReason(error, 'Conflict') || attempt === conflictAttempts) throw error;
      lease = undefined;
    }
  }
}
