import type { MemberDevice, MemberFacts, MemberPower } from '../desktop-backend.js';
import { formatDesktopId } from '../ids.js';
import {
  assignedToKey,
  claimedAtAnnotation,
  poolLabel,
  sessionIdAnnotation,
  sourceAnnotation,
} from '../keys.js';
import type { PodObject } from '../kube-objects.js';
import { isExtendedResource } from './ct-pool-spec.js';

const finishedPhases = new Set(['Succeeded', 'Failed']);
const failingReasons = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerError',
  'CreateContainerConfigError',
  'CrashLoopBackOff',
]);

function isReady(pod: PodObject): boolean {
  return (
    pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ??
    false
  );
}

function waitingReason(pod: PodObject): string | undefined {
  return pod.status?.containerStatuses?.find((status) => status.state?.waiting?.reason)?.state?.waiting
    ?.reason;
}

/**
 * The power of a member's Pod in the backend-neutral words: an unscheduled Pod is `provisioning`, a scheduled
 * one `starting` until it runs and is Ready, a finished one `stopped` (exit 0) or `failed`, one being deleted
 * `stopping`. Pure.
 */
export function powerOfPod(pod: PodObject): MemberPower {
  if (pod.metadata.deletionTimestamp) return 'stopping';
  const phase = pod.status?.phase;
  if (phase === 'Succeeded') return 'stopped';
  if (phase === 'Failed' || failingReasons.has(waitingReason(pod) ?? '')) return 'failed';
  if (phase === 'Running') return isReady(pod) ? 'running' : 'starting';
  if (phase === 'Pending' || phase === undefined) return pod.spec?.nodeName ? 'starting' : 'provisioning';
  return 'unknown';
}

/** The word people see for a Pod: its phase, the container's waiting reason, `NotReady` or `Terminating`. Pure. */
export function phaseOfPod(pod: PodObject): string {
  if (pod.metadata.deletionTimestamp) return 'Terminating';
  const phase = pod.status?.phase ?? 'Pending';
  if (phase === 'Pending') return waitingReason(pod) ?? 'Pending';
  if (phase === 'Running' && !isReady(pod)) return 'NotReady';
  return phase;
}

function devicesOf(pod: PodObject): MemberDevice[] {
  const limits = pod.spec?.containers[0]?.resources?.limits ?? {};
  return Object.keys(limits)
    .filter(isExtendedResource)
    .flatMap((resource) =>
      Array.from({ length: Number(limits[resource]) || 0 }, (_, index) => ({
        kind: /gpu/i.test(resource) ? ('gpu' as const) : ('host-device' as const),
        name: `${resource}-${index + 1}`,
        resource,
      })),
    );
}

/** Whether a Pod has finished (its container ended); a finished member is replaced from its image. Pure. */
export function isPodFinished(pod: PodObject): boolean {
  return finishedPhases.has(pod.status?.phase ?? '');
}

/**
 * Turns a member's Pod into the plain {@link MemberFacts} services see. Pure. A container member is always
 * ephemeral, offers only its terminal, and its source is its image.
 */
export function toCtMemberFacts(pod: PodObject): MemberFacts {
  const namespace = pod.metadata.namespace ?? '';
  const member = pod.metadata.name ?? '';
  const labels = pod.metadata.labels ?? {};
  const annotations = pod.metadata.annotations ?? {};
  const finished = isPodFinished(pod);
  return {
    kind: 'ct',
    namespace,
    member,
    pool: labels[poolLabel] ?? '',
    desktopId: formatDesktopId({ kind: 'ct', namespace, member }),
    uid: pod.metadata.uid ?? '',
    resourceVersion: pod.metadata.resourceVersion ?? '',
    deleting: pod.metadata.deletionTimestamp !== undefined,
    power: powerOfPod(pod),
    phase: phaseOfPod(pod),
    address: finished ? undefined : pod.status?.podIP,
    node: finished ? undefined : pod.spec?.nodeName,
    consoles: ['terminal'],
    devices: devicesOf(pod),
    ephemeral: true,
    source: annotations[sourceAnnotation] ?? pod.spec?.containers[0]?.image,
    presentation: {
      holder: annotations[assignedToKey],
      label: labels[assignedToKey],
      claimedAt: annotations[claimedAtAnnotation],
      sessionId: annotations[sessionIdAnnotation],
    },
    previousInstance: finished,
    usesLegacyRunField: false,
  };
}
