import { setTimeout as sleep } from 'node:timers/promises';
import type { VdiContext } from '../context.js';
import { isVdiError, VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import { leaseNamePrefix } from '../keys.js';
import { readModifyWrite } from '../kube/read-modify-write.js';
import type { LeaseObject } from '../kube-objects.js';
import { deleteLeaseAsRead } from './lease-writes.js';

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
 * What a claimant Lease serializes: one identity's claims on one pool, or, without `pool`, on every pool of the
 * namespace (the claims a per-user limit applies to, which count the desktops the identity holds everywhere).
 */
export interface ClaimantScope {
  namespace: string;
  pool?: string | undefined;
  identity: string;
}

/**
 * The name of the claimant Lease of a scope: `corral-vdi-claimant-` and a hash of the pool and the identity (a pool
 * name holds no `/`, so the pair is unambiguous), or `corral-vdi-claimant-user-` and a hash of the identity alone.
 */
export function claimantLeaseName(scope: Pick<ClaimantScope, 'pool' | 'identity'>): string {
  const { pool, identity } = scope;
  return pool === undefined
    ? `${leaseNamePrefix}claimant-user-${shortHash(identity)}`
    : `${leaseNamePrefix}claimant-${shortHash(`${pool}/${identity}`)}`;
}

function claimantLease(ctx: VdiContext, scope: ClaimantScope): LeaseObject {
  const now = ctx.clock.now().toISOString();
  return {
    metadata: {
      // no pool label: it is read by name only, and must not look like a member's claim to pool listings
      name: claimantLeaseName(scope),
      namespace: scope.namespace,
    },
    spec: { holderIdentity: scope.identity, acquireTime: now, renewTime: now },
  };
}

// one write conditional on the Lease as last read (none: a create); another's write or delete since → not taken
async function writeUnlessChanged(
  ctx: VdiContext,
  known: LeaseObject | undefined,
  next: LeaseObject,
): Promise<ClaimantLock | undefined> {
  const store = ctx.cluster.leasesIn(next.metadata.namespace ?? '');
  try {
    const written = await readModifyWrite(store, next.metadata.name ?? '', () => next, {
      known: { object: known },
      attempts: 1,
    });
    return written.kind === 'written' ? { lease: written.object, writtenAt: performance.now() } : undefined;
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Takes the identity's claimant Lease of a scope: creates it, or, while another claim of the identity holds it,
 * waits until that one deletes it. A Lease that stays unchanged for {@link claimantStaleMs} was left by a process
 * that died, and is taken over conditional on the `resourceVersion` seen.
 *
 * @throws {@link VdiError} `CLAIM_CHANGED` (retryable) when other claims of the identity held it for 30 s.
 */
async function takeClaimantLock(ctx: VdiContext, scope: ClaimantScope): Promise<ClaimantLock> {
  const { namespace, pool, identity } = scope;
  const name = claimantLeaseName(scope);
  const started = performance.now();
  let seen: { resourceVersion: string | undefined; since: number } | undefined;
  for (;;) {
    const created = await writeUnlessChanged(ctx, undefined, claimantLease(ctx, scope));
    if (created) return created;
    const current = await ctx.cluster.getLease(namespace, name);
    // deleted since the create was refused: create it again
    if (current === undefined) continue;
    const now = performance.now();
    const { resourceVersion } = current.metadata;
    if (seen === undefined || seen.resourceVersion !== resourceVersion)
      seen = { resourceVersion, since: now };
    else if (now - seen.since >= claimantStaleMs) {
      const taken = await writeUnlessChanged(ctx, current, claimantLease(ctx, scope));
      if (taken) return taken;
      continue;
    }
    if (now - started >= claimantWaitMs) {
      const where = pool === undefined ? '' : ` on pool "${pool}"`;
      throw new VdiError(
        'CLAIM_CHANGED',
        `Another claim of ${identity}${where} in namespace "${namespace}" has been running for 30 s; try again once it ends.`,
        { retryable: true, details: { namespace, ...(pool === undefined ? {} : { pool }) } },
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
  return await writeUnlessChanged(ctx, lease, {
    ...lease,
    spec: { ...lease.spec, renewTime: ctx.clock.now().toISOString() },
  });
}

/**
 * Takes the claimant Leases of the scopes one after another, always in the order given, so that two claims never
 * wait for each other's; one that cannot be taken gives back those already taken.
 *
 * @throws {@link VdiError} `CLAIM_CHANGED` (retryable) as {@link takeClaimantLock}.
 */
export async function takeClaimantLocks(
  ctx: VdiContext,
  scopes: readonly ClaimantScope[],
): Promise<ClaimantLock[]> {
  const locks: ClaimantLock[] = [];
  try {
    for (const scope of scopes) locks.push(await takeClaimantLock(ctx, scope));
    return locks;
  } catch (error) {
    await giveBackClaimantLocks(ctx, locks);
    throw error;
  }
}

/**
 * Deletes the claimant Leases a claim holds. One that cannot be deleted (the apiserver went away, or the identity may
 * not delete Leases) never changes what the claim answers: it is told as a `claimant-lease-left` event, and the next
 * claim of its scope takes it over once it stayed unchanged for {@link claimantStaleMs}.
 */
export async function giveBackClaimantLocks(
  ctx: VdiContext,
  locks: readonly (ClaimantLock | undefined)[],
): Promise<void> {
  await Promise.all(
    locks.map(async (lock) => {
      if (!lock) return;
      await deleteLeaseAsRead(ctx, lock.lease).catch((error: unknown) => {
        const { metadata, spec } = lock.lease;
        ctx.events.emit('claimant-lease-left', {
          namespace: metadata.namespace ?? '',
          lease: metadata.name ?? '',
          identity: spec.holderIdentity ?? '',
          error: error instanceof Error ? error.message : String(error),
        });
      });
    }),
  );
}
