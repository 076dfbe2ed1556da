import { ApiException, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../../src/clock.js';
import { simulatorAnnotations } from '../../src/testing/kubevirt/fault-knobs.js';
import { type RunningWatch, watchPath } from './watch-path.js';

// Several processes move the clock at once: each move is a conditional write, tried again when it loses.
const maxAdvanceTries = 50;

/** Reads the shared time of a namespace from the simulator's clock annotation. */
export function readClockAnnotation(annotations: Record<string, unknown> | undefined): number | undefined {
  const text = annotations?.[simulatorAnnotations.clock];
  const time = typeof text === 'string' ? Date.parse(text) : Number.NaN;
  return Number.isFinite(time) ? time : undefined;
}

/**
 * Moves a namespace's clock (the one the simulator measures its delays against) forward by `ms`, conditional on
 * the Namespace's resourceVersion so that two processes moving it at once both count.
 */
export async function advanceSharedClock(
  kubeConfig: KubeConfig,
  namespace: string,
  ms: number,
): Promise<number> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  for (let attempt = 1; ; attempt += 1) {
    const found = await core.readNamespace({ name: namespace });
    const now = readClockAnnotation(found.metadata?.annotations);
    if (now === undefined) throw new Error(`namespace ${namespace} has no shared clock`);
    const next = now + ms;
    found.metadata = {
      ...found.metadata,
      annotations: {
        ...found.metadata?.annotations,
        [simulatorAnnotations.clock]: new Date(next).toISOString(),
      },
    };
    try {
      await core.replaceNamespace({ name: namespace, body: found });
      return next;
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 409) || attempt >= maxAdvanceTries) throw error;
    }
  }
}

/** A clock that follows a namespace's shared time as this process last saw it. */
export interface SharedClock extends Clock, RunningWatch {}

/** Follows the shared clock of a namespace through a watch; `now()` is the last time seen. */
export function followSharedClock(
  kubeConfig: KubeConfig,
  namespace: string,
  onError: (error: unknown) => void,
): SharedClock {
  let current: number | undefined;
  const watch = watchPath(
    kubeConfig,
    '/api/v1/namespaces',
    { fieldSelector: `metadata.name=${namespace}` },
    (_, object) => {
      const time = readClockAnnotation(object.metadata?.annotations as Record<string, unknown> | undefined);
      // Watches of two processes may deliver moves in any interleaving, but each one only ever moves forward.
      if (time !== undefined) current = Math.max(current ?? time, time);
    },
    onError,
  );
  return {
    ...watch,
    now: () => {
      if (current === undefined) throw new Error(`the shared clock of ${namespace} has not been seen yet`);
      return new Date(current);
    },
  };
}
