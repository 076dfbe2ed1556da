import type { VdiContext } from '../context.js';
import type { ClaimToPresent, MemberFacts, MemberRef } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { assignedToKey, claimedAtAnnotation, sessionIdAnnotation } from '../keys.js';
import { isConflictReason } from '../kube/errors.js';
import { podKind } from '../kube/resource-kinds.js';
import type { ObjectMeta } from '../kube-objects.js';
import { sanitizeLabelValue } from '../sanitize-label-value.js';

// the kubelet's status writes bump a Pod's resourceVersion too, so a few rereads are normal while it starts
const attempts = 5;

function keptChanging({ namespace, member }: MemberRef, cause: unknown): VdiError {
  return new VdiError(
    'CONFLICT',
    `Pod ${namespace}/${member} kept changing while its claim's presentation was written; try again.`,
    { retryable: true, details: { namespace, member }, cause },
  );
}

function presents(metadata: ObjectMeta, claim: ClaimToPresent): boolean {
  return (
    metadata.annotations?.[assignedToKey] === claim.holder &&
    metadata.labels?.[assignedToKey] === sanitizeLabelValue(claim.holder) &&
    metadata.annotations?.[claimedAtAnnotation] === claim.claimedAt &&
    metadata.annotations?.[sessionIdAnnotation] === claim.sessionId
  );
}

/**
 * Writes the presentation copy of a claim on the member's Pod (annotation, label-safe label, claim time),
 * conditional on the resourceVersion in `facts`, then on each one read after a conflict (none for a claim to
 * present `exact`ly).
 *
 * @returns the Pod's resourceVersion once it presents the claim; `undefined` when an `exact` write met a changed
 *   Pod.
 * @throws `VdiError` `MEMBER_NOT_FOUND` (with `notFound`'s words); `CONFLICT` (retryable) when it kept changing.
 */
export async function presentCtClaim(
  ctx: VdiContext,
  facts: MemberFacts,
  claim: ClaimToPresent,
  notFound: (ref: MemberRef) => VdiError,
): Promise<string | undefined> {
  const ref = { namespace: facts.namespace, member: facts.member };
  let metadata: ObjectMeta = {
    resourceVersion: facts.resourceVersion,
    labels: facts.presentation.label === undefined ? {} : { [assignedToKey]: facts.presentation.label },
    annotations: {
      ...(facts.presentation.holder === undefined ? {} : { [assignedToKey]: facts.presentation.holder }),
      ...(facts.presentation.claimedAt === undefined
        ? {}
        : { [claimedAtAnnotation]: facts.presentation.claimedAt }),
      ...(facts.presentation.sessionId === undefined
        ? {}
        : { [sessionIdAnnotation]: facts.presentation.sessionId }),
    },
  };
  for (let attempt = 1; ; attempt += 1) {
    if (presents(metadata, claim)) return metadata.resourceVersion ?? '';
    try {
      const patch = {
        metadata: {
          labels: { [assignedToKey]: sanitizeLabelValue(claim.holder) },
          annotations: {
            [assignedToKey]: claim.holder,
            [claimedAtAnnotation]: claim.claimedAt,
            [sessionIdAnnotation]: claim.sessionId,
          },
        },
      };
      const written = await ctx.cluster
        .resource(podKind)
        .in(ref.namespace)
        .patch(ref.member, patch, { lock: metadata.resourceVersion });
      return written.metadata.resourceVersion ?? '';
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) throw notFound(ref);
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (claim.exact) return undefined;
      if (attempt === attempts) throw keptChanging(ref, error);
      const pod = await ctx.cluster.resource(podKind).in(ref.namespace).get(ref.member);
      if (!pod) throw notFound(ref);
      metadata = pod.metadata;
    }
  }
}

/**
 * Removes the Pod's presentation copy while it still names `holder`, conditional on the resourceVersion read.
 *
 * @returns whether a copy was removed.
 * @throws `VdiError` `CONFLICT` (retryable) when the Pod kept changing.
 */
export async function clearCtPresentation(
  ctx: VdiContext,
  ref: MemberRef,
  holder: string,
  sessionId?: string,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    const pod = await ctx.cluster.resource(podKind).in(ref.namespace).get(ref.member);
    if (!pod || pod.metadata.annotations?.[assignedToKey] !== holder) return false;
    if (sessionId !== undefined && pod.metadata.annotations?.[sessionIdAnnotation] !== sessionId)
      return false;
    try {
      const patch = {
        metadata: {
          labels: { [assignedToKey]: null },
          annotations: { [assignedToKey]: null, [claimedAtAnnotation]: null, [sessionIdAnnotation]: null },
        },
      };
      await ctx.cluster
        .resource(podKind)
        .in(ref.namespace)
        .patch(ref.member, patch, { lock: pod.metadata.resourceVersion });
      return true;
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) return false;
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (attempt === attempts) throw keptChanging(ref, error);
    }
  }
}
