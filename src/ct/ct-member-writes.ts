import { setTimeout as sleep } from 'node:timers/promises';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { isConflictReason } from '../kube/errors.js';
import { podKind, pvcKind, serviceKind } from '../kube/resource-kinds.js';
import type { PersistentVolumeClaimObject, PodObject } from '../kube-objects.js';
import { formatDuration } from '../parse-duration.js';
import { ctMemberLabel, kindLabel } from './ct-keys.js';
import { buildCtHomeClaim, buildCtPod, buildCtService } from './ct-member-objects.js';
import type { StoredCtPool } from './ct-pool-store.js';

const goneInterval = 100;
// a member Pod is deleted only to be made again or removed: its container has nothing to save beyond the home volume
const deleteGraceSeconds = 1;

/** Where a member's objects are written: its namespace, its pool as stored, and its name. */
export interface CtMemberTarget {
  namespace: string;
  stored: StoredCtPool;
  member: string;
}

function memberSelector(member: string): string {
  return `${kindLabel}=ct,${ctMemberLabel}=${member}`;
}

function ignoreAlreadyExists(error: unknown): undefined {
  if (isConflictReason(error, 'AlreadyExists')) return;
  throw error;
}

/** The member's home volume claims that are not being deleted, newest first. */
async function liveHomeClaims(
  ctx: VdiContext,
  namespace: string,
  member: string,
): Promise<PersistentVolumeClaimObject[]> {
  const claims = await ctx.cluster.resource(pvcKind).in(namespace).list(memberSelector(member));
  return claims
    .filter((claim) => !claim.metadata.deletionTimestamp)
    .sort((left, right) =>
      (right.metadata.creationTimestamp ?? '').localeCompare(left.metadata.creationTimestamp ?? ''),
    );
}

/** The name of the member's home volume claim, made when it has none; `undefined` when the spec has no home. */
export async function ensureHomeClaim(ctx: VdiContext, target: CtMemberTarget): Promise<string | undefined> {
  const { namespace, stored, member } = target;
  const claim = buildCtHomeClaim({ spec: stored.spec, member, owner: stored.configMap });
  if (!claim) return undefined;
  const [current] = await liveHomeClaims(ctx, namespace, member);
  if (current) return current.metadata.name;
  return (await ctx.cluster.resource(pvcKind).in(namespace).create(claim)).metadata.name;
}

/**
 * Empties the member's home: deletes each claim it has and makes a fresh one, without waiting for the old ones
 * to go (the volume's protection holds them until no Pod uses them). Safe to repeat: a repeat wipes again.
 */
export async function wipeHomeClaim(ctx: VdiContext, target: CtMemberTarget): Promise<string | undefined> {
  const { namespace, member } = target;
  for (const claim of await liveHomeClaims(ctx, namespace, member)) {
    await ctx.cluster
      .resource(pvcKind)
      .in(namespace)
      .delete(claim.metadata.name ?? '', { preconditions: { uid: claim.metadata.uid ?? '' } });
  }
  return await ensureHomeClaim(ctx, target);
}

/** Makes the member's headless Service unless it exists. */
export async function ensureService(ctx: VdiContext, target: CtMemberTarget): Promise<void> {
  const { namespace, stored, member } = target;
  await ctx.cluster
    .resource(serviceKind)
    .in(namespace)
    .create(buildCtService({ spec: stored.spec, member, owner: stored.configMap }))
    .catch(ignoreAlreadyExists);
}

/** Creates the member's Pod from the spec; a Pod already there (made by a racing reset or pass) is returned. */
export async function createMemberPod(
  ctx: VdiContext,
  target: CtMemberTarget,
  homeClaim: string | undefined,
): Promise<PodObject> {
  const { namespace, stored, member } = target;
  const pod = buildCtPod({ spec: stored.spec, member, owner: stored.configMap, homeClaim });
  try {
    return await ctx.cluster.createPod(namespace, pod);
  } catch (error) {
    ignoreAlreadyExists(error);
    const existing = await ctx.cluster.resource(podKind).in(namespace).get(member);
    if (existing) return existing;
    throw error;
  }
}

/**
 * Deletes the member's Pod (only while it is the one read, when `uid` is given) and waits until it is gone, so
 * one of the same name can be made.
 *
 * @throws `VdiError` `CLONE_TIMEOUT` (retryable) when it is still there after `timeoutMs`; `CANCELLED`.
 */
export async function deletePodAndWait(
  ctx: VdiContext,
  ref: { namespace: string; member: string; uid?: string | undefined },
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<void> {
  const { namespace, member, uid } = ref;
  const pod = await ctx.cluster.resource(podKind).in(namespace).get(member);
  if (pod && !pod.metadata.deletionTimestamp && (uid === undefined || pod.metadata.uid === uid)) {
    await ctx.cluster
      .resource(podKind)
      .in(namespace)
      .delete(member, {
        preconditions: { uid: pod.metadata.uid ?? '' },
        gracePeriodSeconds: deleteGraceSeconds,
      });
  }
  const started = ctx.clock.now().getTime();
  while (await ctx.cluster.resource(podKind).in(namespace).get(member)) {
    if (ctx.clock.now().getTime() - started >= options.timeoutMs) {
      throw new VdiError(
        'CLONE_TIMEOUT',
        `Pod ${namespace}/${member} was still being deleted after ${formatDuration(options.timeoutMs)}; check its node with "kubectl get pod -n ${namespace} ${member} -o wide", then release again.`,
        { retryable: true, details: { member, namespace } },
      );
    }
    try {
      await sleep(goneInterval, undefined, options.signal ? { signal: options.signal } : {});
    } catch (error) {
      throw new VdiError('CANCELLED', `Recreating ${namespace}/${member} was cancelled by the caller.`, {
        cause: error,
      });
    }
  }
}

/** Deletes every object of a member: its Pod, its Service and its home volume claims. Safe to repeat. */
export async function deleteMemberObjects(
  ctx: VdiContext,
  ref: { namespace: string; member: string },
): Promise<void> {
  const { namespace, member } = ref;
  const [pod, service, claims] = await Promise.all([
    ctx.cluster.resource(podKind).in(namespace).get(member),
    ctx.cluster.resource(serviceKind).in(namespace).get(member),
    ctx.cluster.resource(pvcKind).in(namespace).list(memberSelector(member)),
  ]);
  if (pod)
    await ctx.cluster
      .resource(podKind)
      .in(namespace)
      .delete(member, {
        preconditions: { uid: pod.metadata.uid ?? '' },
        gracePeriodSeconds: deleteGraceSeconds,
      });
  if (service?.metadata.labels?.[kindLabel] === 'ct') {
    await ctx.cluster
      .resource(serviceKind)
      .in(namespace)
      .delete(member, { preconditions: { uid: service.metadata.uid ?? '' } });
  }
  for (const claim of claims) {
    await ctx.cluster
      .resource(pvcKind)
      .in(namespace)
      .delete(claim.metadata.name ?? '', { preconditions: { uid: claim.metadata.uid ?? '' } });
  }
}
