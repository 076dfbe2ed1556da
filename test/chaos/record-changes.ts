import type { KubeConfig } from '@kubernetes/client-node';
import {
  assignedToKey,
  leaseMemberLabel,
  leasePoolLabel,
  poolLabel,
  releasingAnnotation,
  resetDueAnnotation,
  sessionIdAnnotation,
} from '../../src/keys.js';
import type { Change, ChangeType, LeaseChange, VmChange } from './history.js';
import { readClockAnnotation } from './shared-clock.js';
import { type RunningWatch, type WatchedObject, watchPath } from './watch-path.js';

type Strings = Record<string, string> | undefined;

function metadataOf(object: WatchedObject) {
  const metadata = object.metadata ?? {};
  return {
    name: metadata.name ?? '',
    resourceVersion: Number(metadata.resourceVersion ?? Number.NaN),
    uid: metadata.uid ?? '',
    labels: metadata.labels as Strings,
    annotations: metadata.annotations as Strings,
  };
}

/** A Lease as the history keeps it. */
export function leaseChangeOf(type: ChangeType, object: WatchedObject, at: number): LeaseChange {
  const { name, resourceVersion, uid, labels, annotations } = metadataOf(object);
  const spec = (object.spec ?? {}) as {
    holderIdentity?: string;
    renewTime?: string;
    leaseDurationSeconds?: number;
  };
  const optional = {
    uid: uid === '' ? undefined : uid,
    member: labels?.[leaseMemberLabel],
    pool: labels?.[leasePoolLabel],
    holder: spec.holderIdentity,
    sessionId: annotations?.[sessionIdAnnotation],
    releasing: annotations?.[releasingAnnotation],
    resetDue: annotations?.[resetDueAnnotation],
    renewTime: spec.renewTime,
    durationSeconds: spec.leaseDurationSeconds,
  };
  const present = Object.entries(optional).filter(([, value]) => value !== undefined);
  return { kind: 'lease', type, at, resourceVersion, name, ...Object.fromEntries(present) };
}

/** A VM as the history keeps it. */
export function vmChangeOf(type: ChangeType, object: WatchedObject, at: number): VmChange {
  const { name, resourceVersion, labels, annotations } = metadataOf(object);
  const status = (object.status ?? {}) as { printableStatus?: string };
  const spec = (object.spec ?? {}) as { runStrategy?: string };
  const optional = {
    pool: labels?.[poolLabel],
    assignedTo: annotations?.[assignedToKey],
    sessionId: annotations?.[sessionIdAnnotation],
    printableStatus: status.printableStatus,
    runStrategy: spec.runStrategy,
  };
  const present = Object.entries(optional).filter(([, value]) => value !== undefined);
  return { kind: 'vm', type, at, resourceVersion, name, ...Object.fromEntries(present) };
}

/** The watches of one namespace's Leases, VMs, VMIs and shared clock, gathering every change in arrival order. */
export interface ChangeRecorder {
  readonly changes: Change[];
  /** Watch failures; a storm with any is not judged, as its history has a gap. */
  readonly errors: string[];
  ready: Promise<void>;
  stop(): void;
}

/** Starts recording the changes of a namespace; await `ready` before anything is to be recorded. */
export function recordChanges(kubeConfig: KubeConfig, namespace: string): ChangeRecorder {
  const changes: Change[] = [];
  const errors: string[] = [];
  const onError = (what: string) => (error: unknown) =>
    errors.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
  let lastClock: number | undefined;
  const kubevirt = `/apis/kubevirt.io/v1/namespaces/${namespace}`;
  const watches: RunningWatch[] = [
    watchPath(
      kubeConfig,
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      {},
      (type, object) => changes.push(leaseChangeOf(type as ChangeType, object, Date.now())),
      onError('leases'),
    ),
    watchPath(
      kubeConfig,
      `${kubevirt}/virtualmachines`,
      {},
      (type, object) => changes.push(vmChangeOf(type as ChangeType, object, Date.now())),
      onError('virtual machines'),
    ),
    watchPath(
      kubeConfig,
      `${kubevirt}/virtualmachineinstances`,
      {},
      (type, object) => {
        const { name, resourceVersion, uid } = metadataOf(object);
        const phase = (object.status as { phase?: string } | undefined)?.phase;
        changes.push({
          kind: 'vmi',
          type: type as ChangeType,
          at: Date.now(),
          resourceVersion,
          name,
          uid,
          ...(phase === undefined ? {} : { phase }),
        });
      },
      onError('virtual machine instances'),
    ),
    watchPath(
      kubeConfig,
      '/api/v1/namespaces',
      { fieldSelector: `metadata.name=${namespace}` },
      (type, object) => {
        const { name, resourceVersion, annotations } = metadataOf(object);
        const now = readClockAnnotation(annotations);
        if (now === undefined || now === lastClock) return;
        lastClock = now;
        changes.push({ kind: 'clock', type: type as ChangeType, at: Date.now(), resourceVersion, name, now });
      },
      onError('namespace clock'),
    ),
  ];
  return {
    changes,
    errors,
    ready: Promise.all(watches.map((watch) => watch.ready)).then(() => undefined),
    stop: () => {
      for (const watch of watches) watch.stop();
    },
  };
}
