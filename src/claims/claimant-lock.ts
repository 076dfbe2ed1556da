import { setTimeout as sleep } from 'node:timers/promises';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { leaseNamePrefix } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { shortHash } from './hash.js';

/**
 * How long a claimant Lease may stay unchanged before another claim of its identity takes it over as left by a
 * process that died: judged by the waiting process's own monotonic time, not the policy clock, since it is about
 * whether a process still runs.
 */
export const claimantStaleMs = 5_000;
/** A holder that has held the lock this long writes it again before its next write, so no waiter takes it over. */
const claimantRefreshMs = claimantStaleMs / 4;
const claimantPollMs = 50;
/** How long a claim waits for the identity's other claims of the pool before it gives up. */
const claimantWaitMs = 30_000;

/** The identity's claimant Lease while this claim holds it. */
export interface ClaimantLock {
  lease: LeaseObject;
  /** `performance.now()` at this claim's last write of the Lease. */
  writtenAt: number;
}

/**
 * The name of the Lease that serializes one identity's claims on one pool: `corral-vdi-claimant-` and a hash of
 * both (a pool name holds no `/`, so the pair is unambiguous).
 */
export function claimantLeaseName(pool: string, identity: string): string {
  return `${leaseNamePrefix}claimant-${shortHash(`${pool}/${identity}`)}`;
}

function claimantLease(
  ctx: VdiContext,
  target: { namespace: string; pool: string; identity: string },
  resourceVersion?: string,
): LeaseObject {
  const now = ctx.clock.now().toISOString();
  return {
    metadata: {
      // no pool label: it is read by name only, and must not look like a member's claim to pool listings
      name: claimantLeaseName(target.pool, target.identity),
      namespace: target.namespace,
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    spec: { holderIdentity: target.identity, acquireTime: now, renewTime: now },
  };
}

async function writeUnlessChanged(write: () => Promise<LeaseObject>): Promise<ClaimantLock | undefined> {
  try {
    return { lease: await write(), writtenAt: performance.now() };
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Takes the identity's claimant Lease for one pool: creates it, or, while another claim of the identity holds it,
 * waits until that one deletes it. A Lease that stays unchanged for {@link claimantStaleMs} was left by a process
 * that died, and is taken over conditional on the `resourceVersion` seen.
 *
 * @throws {@link VdiError} `CLAIM_CHANGED` (retryable) when other claims of the identity held it for 30 s.
 */
export async function takeClaimantLock(
  ctx: VdiContext,
  target: { namespace: string; pool: string; identity: string },
): Promise<ClaimantLock> {
  const { namespace, pool, identity } = target;
  const name = claimantLeaseName(pool, identity);
  const started = performance.now();
  let seen: { resourceVersion: string | undefined; since: number } | undefined;
  for (;;) {
    const created = await writeUnlessChanged(() =>
      ctx.cluster.createLease(namespace, claimantLease(ctx, target)),
    );
    if (created) return created;
    const current = await ctx.cluster.getLease(namespace, name);
    // deleted since the create was refused: create it again
    if (current === undefined) continue;
    const now = performance.now();
    const { resourceVersion } = current.metadata;
    if (seen === undefined || seen.resourceVersion !== resourceVersion)
      seen = { resourceVersion, since: now };
    else if (now - seen.since >= claimantStaleMs) {
      const taken = await writeUnlessChanged(() =>
        ctx.cluster.replaceLease(namespace, claimantLease(ctx, target, resourceVersion)),
      );
      if (taken) return taken;
      continue;
    }
    if (now - started >= claimantWaitMs) {
      throw new VdiError(
        'CLAIM_CHANGED',
        `Another claim of ${identity} on pool "${pool}" in namespace "${namespace}" has been running for 30 s; try again once it ends.`,
        { retryable: true, details: { namespace, pool } },
      );
    }
    await sleep(claimantPollMs);
  }
}

/**
 * Writes the held claimant Lease again when it was written a while ago, so that no waiting claim takes it over as
 * left behind; `undefined` when it was taken over meanwhile, and this claim no longer holds it.
 */
export async function keepClaimantLock(
  ctx: VdiContext,
  lock: ClaimantLock,
): Promise<ClaimantLock | undefined> {
  if (performance.now() - lock.writtenAt < claimantRefreshMs) return lock;
  const { lease } = lock;
  const namespace = lease.metadata.namespace ?? '';
  return await writeUnlessChanged(() =>
    ctx.cluster.replaceLease(namespace, {
      ...lease,
      spec: { ...lease.spec, renewTime: ctx.clock.now().toISOString() },
    }),
  );
}
