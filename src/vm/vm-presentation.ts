import type {
  ClaimToPresent,
  MemberFacts,
  MemberRef,
  PresentedClaim,
  PresentOutcome,
} from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  releasedSessionAnnotation,
  sessionIdAnnotation,
} from '../keys.js';
import type { KubeCluster } from '../kube/cluster.js';
import { isConflictReason } from '../kube/errors.js';
import type { ObjectMeta } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import { sanitizeLabelValue } from '../sanitize-label-value.js';
import { asksToRun, asksToStop } from './vm-member-facts.js';

// a VM's status writes bump its resourceVersion too, so a few rereads are normal while it starts or stops
const attempts = 5;

function memberNotFound({ namespace, member }: MemberRef): VdiError {
  return new VdiError(
    'MEMBER_NOT_FOUND',
    `There is no VM "${member}" in namespace "${namespace}"; check the name and the namespace.`,
    { details: { namespace, member } },
  );
}

function keptChanging(
  { namespace, member }: MemberRef,
  cause: unknown,
  writing = "its claim's presentation",
): VdiError {
  return new VdiError(
    'CONFLICT',
    `VM ${namespace}/${member} kept changing while ${writing} was written; try again.`,
    { retryable: true, details: { namespace, member }, cause },
  );
}

interface Observed {
  uid: string;
  resourceVersion: string;
  presentation: PresentedClaim;
  usesLegacyRunField: boolean;
}

function observedOf(vm: VirtualMachine): Observed {
  const { metadata } = vm;
  return {
    uid: metadata.uid ?? '',
    resourceVersion: metadata.resourceVersion ?? '',
    presentation: {
      holder: metadata.annotations?.[assignedToKey],
      label: metadata.labels?.[assignedToKey],
      claimedAt: metadata.annotations?.[claimedAtAnnotation],
      sessionId: metadata.annotations?.[sessionIdAnnotation],
      releasedSession: metadata.annotations?.[releasedSessionAnnotation],
    },
    usesLegacyRunField: typeof vm.spec.running === 'boolean' && vm.spec.runStrategy === undefined,
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
 * not written. A persistent member is sealed against the claim's release: one that wrote the member first
 * ({@link sealVmRelease}) either changed it since `facts` were read, so the write is refused and the record is
 * read, or is in `facts`; then nothing is written. Such a write also starts the member when `claim.start` asks.
 * An ephemeral member is made again by its release, which carries no record, so its claim checks its Lease.
 *
 * @throws `VdiError` `MEMBER_NOT_FOUND`; `CONFLICT` (retryable) when the VM kept changing.
 */
export async function presentVmClaim(
  cluster: KubeCluster,
  facts: MemberFacts,
  claim: ClaimToPresent,
): Promise<PresentOutcome> {
  const ref = { namespace: facts.namespace, member: facts.member };
  let observed: Observed = facts;
  for (let attempt = 1; ; attempt += 1) {
    // a member made again since it was planned carries no release record
    const sealed = !facts.ephemeral && observed.uid === facts.uid;
    const released = observed.presentation.releasedSession;
    if (sealed && released !== undefined && released === claim.sessionId) return { kind: 'released' };
    const start = sealed && claim.start === true;
    if (presents(observed, claim) && !start) {
      return { kind: 'presented', resourceVersion: observed.resourceVersion, started: false, sealed };
    }
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
        ...(start
          ? { spec: observed.usesLegacyRunField ? { running: true } : { runStrategy: 'Always' } }
          : {}),
      });
      return {
        kind: 'presented',
        resourceVersion: written.metadata.resourceVersion ?? '',
        started: start,
        sealed,
      };
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) throw memberNotFound(ref);
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (claim.exact) return { kind: 'changed' };
      if (attempt === attempts) throw keptChanging(ref, error);
      const vm = await cluster.getVm(ref.namespace, ref.member);
      if (!vm) throw memberNotFound(ref);
      observed = observedOf(vm);
    }
  }
}

/**
 * A release's record on a persistent member, written once its stop was accepted: removes `holder`'s copy (any
 * session of it) and records `sessionId` as released, conditional on the resourceVersion read, writing even when
 * there is no copy. A VM that asks to run again (a start landed after the stop) is not written: the caller stops it
 * again first. A VM that is gone, or already records the session with no copy left, is not written.
 *
 * @returns `false` when the VM asks to run, else `true`.
 * @throws `VdiError` `CONFLICT` (retryable) when the VM kept changing.
 */
export async function sealVmRelease(
  cluster: KubeCluster,
  ref: MemberRef,
  holder: string,
  sessionId: string,
): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    const vm = await cluster.getVm(ref.namespace, ref.member);
    if (!vm) return true;
    if (!asksToStop(vm) && asksToRun(vm)) return false;
    const copy = presentsHolder(vm.metadata, holder);
    if (!copy && vm.metadata.annotations?.[releasedSessionAnnotation] === sessionId) return true;
    try {
      await cluster.patchVm(ref.namespace, ref.member, {
        metadata: {
          resourceVersion: vm.metadata.resourceVersion,
          ...(copy ? { labels: { [assignedToKey]: null } } : {}),
          annotations: {
            [releasedSessionAnnotation]: sessionId,
            ...(copy
              ? { [assignedToKey]: null, [claimedAtAnnotation]: null, [sessionIdAnnotation]: null }
              : {}),
          },
        },
      });
      return true;
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) return true;
      if (!isConflictReason(error, 'Conflict')) throw error;
      if (attempt === attempts) throw keptChanging(ref, error, "its claim's release");
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
