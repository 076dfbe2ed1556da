import type { VdiContext } from '../context.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import type { LeaseObject } from '../kube-objects.js';
import { type ClaimKey, claimKeyOf, isSameClaim } from './claim-key.js';

/** How a read-modify-write of a claim's Lease ended. */
export type LeaseUpdate = { kind: 'written'; lease: LeaseObject } | { kind: 'unchanged' } | { kind: 'gone' };

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
  const isOurs = (lease: LeaseObject | undefined): lease is LeaseObject =>
    lease !== undefined && isSameClaim(claimKeyOf(lease), claim);
  const result = await readModifyWrite(
    ctx.cluster.leasesIn(namespace),
    name,
    (lease) => (isOurs(lease) ? change(lease) : undefined),
    input.known ? { known: { object: input.known } } : {},
  );
  if (result.kind === 'written') return { kind: 'written', lease: result.object };
  return isOurs(result.current) ? { kind: 'unchanged' } : { kind: 'gone' };
}
