import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerState, TerminatedState } from './pod-sandbox.js';

/** What the status needs to know of one container. */
export interface ContainerView {
  name: string;
  image: string;
  state: ContainerState;
  lastTerminated: TerminatedState | undefined;
  restartCount: number;
  everStarted: boolean;
}

/** The inputs of {@link planPodStatus}. */
export interface PodStatusInput {
  pod: V1Pod;
  /** The containers as they run; undefined while they are still being created. */
  containers: ContainerView[] | undefined;
  podIp: string;
  startTime: Date;
  neverReady: boolean;
}

/** A condition without its transition time, which the caller keeps. */
export interface PlannedCondition {
  type: 'PodScheduled' | 'Initialized' | 'ContainersReady' | 'Ready';
  status: 'True' | 'False';
  reason?: string;
  message?: string;
}

/** The Pod status the agent writes, conditions still without their times. */
export interface PlannedPodStatus {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  conditions: PlannedCondition[];
  hostIP: string;
  podIP: string;
  podIPs: Array<{ ip: string }>;
  startTime: string;
  containerStatuses: Array<Record<string, unknown>>;
}

function stateJson(state: ContainerState, containerId: string | undefined): Record<string, unknown> {
  switch (state.kind) {
    case 'waiting':
      return { waiting: { reason: state.reason, ...(state.message ? { message: state.message } : {}) } };
    case 'running':
      return { running: { startedAt: state.startedAt.toISOString() } };
    case 'terminated':
      return {
        terminated: {
          exitCode: state.exitCode,
          reason: state.reason,
          ...(state.message ? { message: state.message } : {}),
          ...(state.startedAt ? { startedAt: state.startedAt.toISOString() } : {}),
          finishedAt: state.finishedAt.toISOString(),
          ...(containerId ? { containerID: containerId } : {}),
        },
      };
  }
}

// The kubelet's phase rule: waiting containers keep a Pod Pending; crashed ones count as stopped.
function phaseOf(pod: V1Pod, containers: ContainerView[] | undefined): PlannedPodStatus['phase'] {
  if (containers === undefined) return 'Pending';
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const container of containers) {
    if (container.state.kind === 'running') running += 1;
    else if (container.state.kind === 'terminated') {
      stopped += 1;
      if (container.state.exitCode === 0) succeeded += 1;
    } else if (container.lastTerminated) stopped += 1;
    else waiting += 1;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === 0) return 'Pending';
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Always') return 'Running';
  if (stopped === succeeded) return 'Succeeded';
  return policy === 'OnFailure' ? 'Running' : 'Failed';
}

/**
 * Decides the status a kubelet would report for a Pod: phase, conditions, addresses and one status per
 * container (ready when running, unless the Pod's `never-ready` knob says otherwise).
 */
export function planPodStatus(input: PodStatusInput): PlannedPodStatus {
  const { pod, containers, podIp, neverReady } = input;
  const uid = pod.metadata?.uid ?? '';
  const views: ContainerView[] =
    containers ??
    (pod.spec?.containers ?? []).map((spec) => ({
      name: spec.name,
      image: spec.image ?? '',
      state: { kind: 'waiting', reason: 'ContainerCreating' },
      lastTerminated: undefined,
      restartCount: 0,
      everStarted: false,
    }));
  const phase = phaseOf(pod, containers);
  const containerStatuses = views.map((view) => {
    const containerId = view.everStarted ? `sim://${uid}/${view.name}/${view.restartCount}` : undefined;
    const running = view.state.kind === 'running';
    return {
      name: view.name,
      image: view.image,
      imageID: view.everStarted ? `sim://${view.image}` : '',
      ...(containerId ? { containerID: containerId } : {}),
      ready: running && !neverReady,
      restartCount: view.restartCount,
      started: running,
      state: stateJson(view.state, containerId),
      lastState: view.lastTerminated ? stateJson(view.lastTerminated, undefined) : {},
    };
  });
  const unready = containerStatuses.filter((status) => !status.ready).map((status) => status.name);
  const finished = phase === 'Succeeded' || phase === 'Failed';
  const readiness: PlannedCondition =
    unready.length === 0
      ? { type: 'Ready', status: 'True' }
      : {
          type: 'Ready',
          status: 'False',
          reason: finished ? 'PodCompleted' : 'ContainersNotReady',
          ...(finished ? {} : { message: `containers with unready status: [${unready.join(' ')}]` }),
        };
  return {
    phase,
    conditions: [
      { type: 'Initialized', status: 'True' },
      { ...readiness },
      { ...readiness, type: 'ContainersReady' },
      { type: 'PodScheduled', status: 'True' },
    ],
    hostIP: '127.0.0.1',
    podIP: podIp,
    podIPs: [{ ip: podIp }],
    startTime: input.startTime.toISOString(),
    containerStatuses,
  };
}
