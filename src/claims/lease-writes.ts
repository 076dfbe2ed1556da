import type { VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { shortHash } from '../hash.js';
import {
  holderGroupsAnnotation,
  leaseDurationSeconds,
  leaseHolderLabel,
  leaseKindLabel,
  leaseMemberLabel,
  leasePoolLabel,
  releaseCauseAnnotation,
  releasingAnnotation,
  resetDueAnnotation,
  sessionIdAnnotation,
  sourceAnnotation,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { isValidLabelValue } from '../sanitize-label-value.js';
import { isReleasing } from './releasing-mark.js';

/** The member a new claim is for, and its claimant. */
export interface ClaimTarget {
  kind: DesktopKind;
  namespace: string;
  pool: string;
  member: string;
  identity: string;
  /** What the claim records of the holder's groups (`corral.dev/vdi-holder-groups`). */
  holderGroups: string;
  /** What an ephemeral member is made again from (a VM's golden VM), recorded on the claim (`corral.dev/vdi-source`). */
  source?: string | undefined;
}

/**
 * A Lease to replace: the resourceVersion it was read at, the transitions it will have counted, and whether the
 * member still needs a reset (the new Lease is marked so until it is done).
 */
export interface LeaseToReplace {
  resourceVersion: string;
  leaseTransitions: number;
  reset: boolean;
}

/** The label selector of the claims `identity` holds in `pool`, as {@link writeClaimLease} labels them. */
export function ownClaimsSelector(pool: string, identity: string): string {
  return `${leasePoolLabel}=${pool},${leaseHolderLabel}=${shortHash(identity)}`;
}

function newLease(ctx: VdiContext, target: ClaimTarget, resetDue: boolean): LeaseObject {
  const { kind, namespace, pool, member, identity, holderGroups, source } = target;
  const now = ctx.clock.now().toISOString();
  const sessionId = ctx.newSessionId();
  return {
    metadata: {
      name: leaseNameFor(member),
      namespace,
      labels: {
        [leasePoolLabel]: pool,
        [leaseKindLabel]: kind,
        [leaseHolderLabel]: shortHash(identity),
        ...(isValidLabelValue(member) ? { [leaseMemberLabel]: member } : {}),
      },
      annotations: {
        [sessionIdAnnotation]: sessionId,
        [holderGroupsAnnotation]: holderGroups,
        // written with the claim itself, so a crash before the reset leaves the reset due, not forgotten
        ...(resetDue ? { [resetDueAnnotation]: sessionId } : {}),
        // a reset that stops between the member's delete and its clone still knows what to clone
        ...(source === undefined ? {} : { [sourceAnnotation]: source }),
      },
    },
    spec: { holderIdentity: identity, acquireTime: now, renewTime: now, leaseDurationSeconds },
  };
}

/**
 * The source a claim recorded for its ephemeral member when it was written, when the claim is of `pool`:
 * what a reset makes the member from once the member's own object is gone.
 */
export function recordedSourceOf(lease: LeaseObject | undefined, pool: string): string | undefined {
  return lease?.metadata.labels?.[leasePoolLabel] === pool
    ? lease.metadata.annotations?.[sourceAnnotation]
    : undefined;
}

/**
 * Writes a new claim with a new session: creates the member's Lease (first writer wins), or replaces the stale
 * one conditional on the resourceVersion it was read at.
 *
 * @returns the Lease as written, or `undefined` when another claimant won the race.
 */
export async function writeClaimLease(
  ctx: VdiContext,
  target: ClaimTarget,
  replacing: LeaseToReplace | undefined,
): Promise<LeaseObject | undefined> {
  const lease = newLease(ctx, target, replacing?.reset ?? false);
  try {
    if (replacing === undefined) return await ctx.cluster.createLease(target.namespace, lease);
    return await ctx.cluster.replaceLease(target.namespace, {
      metadata: { ...lease.metadata, resourceVersion: replacing.resourceVersion },
      spec: { ...lease.spec, leaseTransitions: replacing.leaseTransitions },
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Removes the reset-due mark from a claim whose takeover reset is done, conditional on the resourceVersion it was
 * read at.
 *
 * @returns the Lease as written, or `undefined` when it changed or went meanwhile.
 */
export async function clearResetMark(ctx: VdiContext, lease: LeaseObject): Promise<LeaseObject | undefined> {
  const { [resetDueAnnotation]: _done, ...annotations } = lease.metadata.annotations ?? {};
  try {
    return await ctx.cluster.replaceLease(lease.metadata.namespace ?? '', {
      ...lease,
      metadata: { ...lease.metadata, annotations },
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Renews a claim for another Lease duration, conditional on the resourceVersion it was read at; with
 * `holderGroups`, the holder groups it records change in the same write.
 *
 * @returns the Lease as written, or `undefined` when it changed or went meanwhile.
 */
export async function renewClaimLease(
  ctx: VdiContext,
  lease: LeaseObject,
  holderGroups?: string,
): Promise<LeaseObject | undefined> {
  const annotations =
    holderGroups === undefined
      ? lease.metadata.annotations
      : { ...lease.metadata.annotations, [holderGroupsAnnotation]: holderGroups };
  try {
    return await ctx.cluster.replaceLease(lease.metadata.namespace ?? '', {
      ...lease,
      metadata: { ...lease.metadata, ...(annotations === undefined ? {} : { annotations }) },
      spec: { ...lease.spec, renewTime: ctx.clock.now().toISOString() },
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

/**
 * Makes a claim the release's own: marks its Lease releasing for its session, with what ends it (`cause`, see
 * {@link releaseCauseAnnotation}), and renews it, so no claimant takes the member while it is reset. Conditional on
 * the resourceVersion it was read at.
 *
 * @returns the Lease as written, or `undefined` when it changed or went meanwhile.
 */
export async function markClaimReleasing(
  ctx: VdiContext,
  lease: LeaseObject,
  cause: string,
): Promise<LeaseObject | undefined> {
  const annotations = {
    ...lease.metadata.annotations,
    [releasingAnnotation]: lease.metadata.annotations?.[sessionIdAnnotation] ?? '',
    [releaseCauseAnnotation]: cause,
  };
  try {
    return await ctx.cluster.replaceLease(lease.metadata.namespace ?? '', {
      metadata: { ...lease.metadata, annotations },
      spec: { ...lease.spec, renewTime: ctx.clock.now().toISOString() },
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return undefined;
    throw error;
  }
}

// marks keep coming only from a console that flaps; past this many, the next release finishes it
const deleteAttempts = 5;

/**
 * Gives a claim back to its holder after a release of it could not reset the member: removes the releasing mark of
 * its session, conditional on the resourceVersion; a Lease changed since only by marks of the same releasing session
 * (a console mark) is read again and written. A Lease of another claim, or no longer marked, is left alone.
 *
 * @returns whether the Lease is the claim's, unmarked, when this returns.
 */
export async function unmarkClaimReleasing(ctx: VdiContext, lease: LeaseObject): Promise<boolean> {
  const namespace = lease.metadata.namespace ?? '';
  const name = lease.metadata.name ?? '';
  const sessionId = lease.metadata.annotations?.[sessionIdAnnotation];
  let current: LeaseObject | undefined = lease;
  for (let attempt = 1; attempt <= deleteAttempts; attempt += 1) {
    if (current === undefined) return false;
    const same =
      current.metadata.uid === lease.metadata.uid &&
      current.metadata.annotations?.[sessionIdAnnotation] === sessionId;
    if (!same) return false;
    if (!isReleasing(current)) return true;
    const {
      [releasingAnnotation]: _mark,
      [releaseCauseAnnotation]: _cause,
      ...annotations
    } = current.metadata.annotations ?? {};
    try {
      await ctx.cluster.replaceLease(namespace, {
        ...current,
        metadata: { ...current.metadata, annotations },
      });
      return true;
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT', 'NOT_FOUND')) throw error;
      current = await ctx.cluster.getLease(namespace, name);
    }
  }
  return false;
}

/**
 * Ends a claim that {@link markClaimReleasing} made the release's own: deletes its Lease with its uid and the
 * resourceVersion last read as preconditions. A Lease changed since only by marks of the same releasing session
 * (a console mark) is read again and deleted; one of another claim is left alone.
 *
 * @throws {@link VdiError} `CLAIM_CHANGED` when the Lease is no longer the releasing claim.
 */
export async function deleteReleasingLease(
  ctx: VdiContext,
  lease: LeaseObject,
  desktopId: string,
): Promise<void> {
  const namespace = lease.metadata.namespace ?? '';
  const name = lease.metadata.name ?? '';
  const uid = lease.metadata.uid ?? '';
  const sessionId = lease.metadata.annotations?.[sessionIdAnnotation];
  let resourceVersion = lease.metadata.resourceVersion ?? '';
  for (let attempt = 1; ; attempt += 1) {
    try {
      await ctx.cluster.deleteLease(namespace, name, { uid, resourceVersion });
      return;
    } catch (error) {
      if (!isVdiError(error, 'CONFLICT')) throw error;
      const current = await ctx.cluster.getLease(namespace, name);
      if (current === undefined) return;
      const same =
        current.metadata.uid === uid &&
        isReleasing(current) &&
        current.metadata.annotations?.[sessionIdAnnotation] === sessionId;
      if (!same || attempt === deleteAttempts) {
        throw new VdiError(
          'CLAIM_CHANGED',
          `The claim on ${desktopId} changed while it was being released; read the desktop again before deciding.`,
          { details: { desktopId }, cause: error },
        );
      }
      resourceVersion = current.metadata.resourceVersion ?? '';
    }
  }
}

/**
 * Deletes a Lease unless it changed since it was read (uid and resourceVersion as preconditions).
 *
 * @returns `false` when it changed or went meanwhile.
 */
export async function deleteLeaseAsRead(ctx: VdiContext, lease: LeaseObject): Promise<boolean> {
  try {
    return await ctx.cluster.deleteLease(lease.metadata.namespace ?? '', lease.metadata.name ?? '', {
      uid: lease.metadata.uid ?? '',
      resourceVersion: lease.metadata.resourceVersion ?? '',
    });
  } catch (error) {
    if (isVdiError(error, 'CONFLICT', 'NOT_FOUND')) return false;
    throw error;
  }
}
