import { sanitizeLabelValue } from '../claims/sanitize-label-value.js';
import type { ClaimToPresent, MemberFacts, MemberRef, PresentedClaim } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { assignedToKey, claimedAtAnnotation, sessionIdAnnotation } from '../keys.js';
import type { KubeCluster } from '../kube/cluster.js';
import { isConflictReason } from '../kube/errors.js';
import type { ObjectMeta } from '../kube-objects.js';

// a VM's status writes bump its resourceVersion too, so a few rereads are normal while it starts or stops
const attempts = 5;

function memberNotFound({ namespace, member }: MemberRef): VdiError {
  return new VdiError(
    'MEMBER_NOT_FOUND',
    `There is no VM "${member}" in namespace "${namespace}"; check the name and the namespace.`,
    { details: { namespace, member } },
  );
}

function keptChanging({ namespace, member }: MemberRef, cause: unknown): VdiError {
  return new VdiError(
    'CONFLICT',
    `VM ${namespace}/${member} kept changing while its claim's presentation was written; try again.`,
    { retryable: true, details: { namespace, member }, cause },
  );
}

interface Observed {
  resourceVersion: string;
  presentation: PresentedClaim;
}

function observedOf(metadata: ObjectMeta): Observed {
  return {
    resourceVersion: metadata.resourceVersion ?? '',
    presentation: {
      holder: metadata.annotations?.[assignedToKey],
      label: metadata.labels?.[assignedToKey],
      claimedAt: metadata.annotations?.[claimedAtAnnotation],
      sessionId: metadata.annotations?.[sessionIdAnnotation],
    },
  };
}

function presents({ presentation }: Observed, claim: ClaimToPresent): boolean {
  return (
    presentation.holder === claim.holder &&
    presentation.label === sanitizeLabelValue(claim.holder) &&
    presentation.claimedAt === claim.claimedAt &&
    presentation.sessionId === claim.sessionId
  );
}

// an exact annotation decides; a label alone (v0.6.0 wrote only that) counts when it is the holder verbatim
function presentsHolder(metadata: ObjectMeta, holder: string): boolean {
  const annotated = metadata.annotations?.[assignedToKey];
  const labeled = metadata.labels?.[assignedToKey];
  return annotated === holder || (annotated === undefined && labeled !== undefined && labeled === holder);
}

/**
 * Writes the VM's presentation copy of a claim (annotation, label-safe label, claim time), conditional on the
 * resourceVersion in `facts`, then on each one read after a conflict. A VM that already presents the claim is
 * not written.
 *
 * @returns the VM's resourceVersion once it presents the claim.
 * @throws `VdiError` `MEMBER_NOT_FOUND`; `CONFLICT` (retryable) when the VM kept changing.
 */
export async function presentVmClaim(
  cluster: KubeCluster,
  facts: MemberFacts,
  claim: ClaimToPresent,
): Promise<string> {
  const ref = { namespace: facts.namespace, member: facts.member };
  let observed: Observed = facts;
  for (let attempt = 1; ; attempt += 1) {
    if (presents(observed, claim)) return observed.resourceVersion;
    try {
      const written = await cluster.patchVm(ref.namespace, ref.member, {
        metadata: {
          resourceVersion: observed.resourceVersion,
          labels: { [assignedToKey]: sanitizeLabelValue(claim.holder) },
          annotations: {
            [assignedToKey]: claim.holder,
            [claimedAtAnnotation]: claim.claimedAt,
            [sessionIdAnnotation]: claim.sessionId,
          },
        },
      });
      return written.metadata.resourceVersion ?? '';
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) throw memberNotFound(ref);
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (attempt === attempts) throw keptChanging(ref, error);
      const vm = await cluster.getVm(ref.namespace, ref.member);
      if (!vm) throw memberNotFound(ref);
      observed = observedOf(vm.metadata);
    }
  }
}

/**
 * Removes the VM's presentation copy while it still names `holder` (and, with `sessionId`, is that session's),
 * conditional on the resourceVersion read; a newer claim's copy is left alone.
 *
 * @returns whether a copy was removed.
 * @throws `VdiError` `CONFLICT` (retryable) when the VM kept changing.
 */
export async function clearVmPresentation(
  cluster: KubeCluster,
  ref: MemberRef,
  holder: string,
  sessionId?: string,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    const vm = await cluster.getVm(ref.namespace, ref.member);
    if (!vm || !presentsHolder(vm.metadata, holder)) return false;
    if (sessionId !== undefined && vm.metadata.annotations?.[sessionIdAnnotation] !== sessionId) return false;
    try {
      await cluster.patchVm(ref.namespace, ref.member, {
        metadata: {
          resourceVersion: vm.metadata.resourceVersion,
          labels: { [assignedToKey]: null },
          annotations: { [assignedToKey]: null, [claimedAtAnnotation]: null, [sessionIdAnnotation]: null },
        },
      });
      return true;
    } catch (error) {
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (attempt === attempts) throw keptChanging(ref, error);
    }
  }
}
