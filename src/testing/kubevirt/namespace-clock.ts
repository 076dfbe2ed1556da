import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../../clock.js';
import { VdiError } from '../../errors.js';
import { simulatorAnnotations } from './fault-knobs.js';
import { mergePatch } from './kube-calls.js';

/**
 * A test clock that is also the KubeVirt simulator's clock for one namespace: the delay knobs of the VMs and
 * clones in it pass only when the test moves it. @category testing
 */
export interface NamespaceClock extends Clock {
  /** Moves the time forward by `ms` milliseconds, here and for the simulator. */
  advance(ms: number): Promise<void>;
  /** Sets the time, here and for the simulator. */
  set(time: Date | string): Promise<void>;
}

function annotate(kubeConfig: KubeConfig, namespace: string, annotations: Record<string, string | null>) {
  return kubeConfig
    .makeApiClient(CoreV1Api)
    .patchNamespace({ name: namespace, body: { metadata: { annotations } } }, mergePatch);
}

function timeOf(time: Date | string): number {
  const value = new Date(time).getTime();
  if (!Number.isFinite(value)) throw new VdiError('INVALID_INPUT', `${String(time)} is not a time.`);
  return value;
}

/**
 * Gives a namespace a clock of its own, starting at `start`, and returns it. The simulator then measures the
 * `start-delay-ms`, `stop-delay-ms` and `phase-delay-ms` knobs of the namespace's objects against it, and pass the
 * same clock to `createVdi` so the SDK and the simulator share one time.
 *
 * @example
 * ```ts
 * const clock = await createNamespaceClock(cluster.kubeConfig, namespace);
 * // a VM with start-delay-ms 3000 shows Starting, without a VMI …
 * await clock.advance(3000);
 * // … and now gets its VMI
 * ```
 * @throws `VdiError` `INVALID_INPUT` for a start, `set` time or `advance` step that is not a time or a
 * non-negative number of milliseconds.
 * @category testing
 */
export async function createNamespaceClock(
  kubeConfig: KubeConfig,
  namespace: string,
  start: Date | string = '2026-07-02T12:00:00Z',
): Promise<NamespaceClock> {
  let current = timeOf(start);
  const publish = async () => {
    await annotate(kubeConfig, namespace, { [simulatorAnnotations.clock]: new Date(current).toISOString() });
  };
  await publish();
  return {
    now: () => new Date(current),
    advance: async (ms) => {
      if (!Number.isFinite(ms) || ms < 0)
        throw new VdiError('INVALID_INPUT', `advance takes milliseconds of zero or more, not ${ms}.`);
      current += ms;
      await publish();
    },
    set: async (time) => {
      current = timeOf(time);
      await publish();
    },
  };
}

/**
 * Pauses the simulator's controllers for one namespace, or resumes them: while paused its VMs get no VMIs and
 * its clones make no progress, as when KubeVirt's controllers are down; the subresources still answer.
 *
 * @example
 * ```ts
 * await setSimulatorPaused(cluster.kubeConfig, namespace, true);
 * // a pool create now waits for clones that never move, until its --clone-timeout
 * ```
 * @category testing
 */
export async function setSimulatorPaused(
  kubeConfig: KubeConfig,
  namespace: string,
  paused: boolean,
): Promise<void> {
  await annotate(kubeConfig, namespace, { [simulatorAnnotations.paused]: paused ? 'true' : null });
}
