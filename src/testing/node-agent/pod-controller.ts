import { join } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  type V1Node,
  type V1ObjectMeta,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Informer } from '../kubevirt/informer.js';
import type { IpPool } from '../kubevirt/ip-pool.js';
import { httpStatusOf, mergePatch, splitKey } from '../kubevirt/kube-calls.js';
import type { NamespaceScope } from '../kubevirt/namespace-scope.js';
import { planBinding } from './plan-binding.js';
import { type PodKnobs, readPodKnobs } from './pod-knobs.js';
import { PodSandbox } from './pod-sandbox.js';
import { type ContainerView, type PlannedCondition, planPodStatus } from './pod-status.js';

/** A Pod as the agent's cache holds it. */
export type CachedPod = V1Pod & { metadata: V1ObjectMeta };
/** A Node as the agent's cache holds it. */
export type CachedNode = V1Node & { metadata: V1ObjectMeta };

/** What the Pod controller needs. */
export interface PodControllerOptions {
  kubeConfig: KubeConfig;
  pods: Informer<CachedPod>;
  nodes: Informer<CachedNode>;
  ips: IpPool;
  /** Where each Pod's scratch folder is made. */
  dataDir: string;
  scopeOf: (namespace: string) => Promise<NamespaceScope>;
  /** Asks for another look at a Pod's key, now or after `ms` milliseconds. */
  requeue: (key: string, ms?: number) => void;
  /** Pods whose containers run a process that only waits, in place of their commands. */
  isIdle: (pod: V1Pod) => boolean;
  log: (line: string) => void;
}

/** The agent's memory of one Pod it runs, kept by `namespace/name`. */
interface PodRun {
  uid: string;
  podIp: string;
  startTime: Date;
  startDueAt: number | undefined;
  sandbox: PodSandbox | undefined;
  conditionSince: Map<string, { status: string; time: string }>;
  lastWritten: string | undefined;
}

/** The reconcile function and the state the kubelet server reads. */
export interface PodController {
  reconcile(key: string): Promise<void>;
  /** The sandbox of a Pod this agent runs. */
  sandboxOf(namespace: string, name: string): PodSandbox | undefined;
  /** The knobs of the Pod a sandbox runs, as the Pod reads now. */
  knobsOf(sandbox: PodSandbox): PodKnobs;
  /** Kills every process at once, synchronously (for an exit hook). */
  killAll(): void;
  /** Ends every Pod's processes and removes their scratch folders. */
  removeAll(): Promise<void>;
}

const defaultGraceSeconds = 30;

function isFinished(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

function viewsOf(sandbox: PodSandbox): ContainerView[] {
  return [...sandbox.containers.values()].map((record) => ({
    name: record.name,
    image: record.spec.image ?? '',
    state: record.state,
    lastTerminated: record.lastTerminated,
    restartCount: record.restartCount,
    everStarted: record.everStarted,
  }));
}

/**
 * Creates the simulated kubelet and scheduler for Pods: it binds unscheduled Pods to a fitting node, runs the
 * Pods bound to a node it knows as local processes, writes their status, and finishes their deletion.
 */
export function createPodController(options: PodControllerOptions): PodController {
  const { kubeConfig, pods, nodes, ips, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const runs = new Map<string, PodRun>();
  // Bindings sent but not yet seen in the cache, so two Pods never take the same last device.
  const assumed = new Map<string, { uid: string; nodeName: string }>();
  const unschedulable = new Map<string, string>();
  const reported = new Map<string, string>();
  let binding: Promise<void> = Promise.resolve();

  const knobsOf = (pod: V1Pod, key: string): PodKnobs => {
    const { knobs, problems } = readPodKnobs(pod.metadata?.annotations);
    const text = problems.join('; ');
    if (text && reported.get(key) !== text) log(`${key}: ${text}`);
    reported.set(key, text);
    return knobs;
  };

  const boundPods = (exceptKey: string) => {
    const bound: Array<{ pod: V1Pod; nodeName: string }> = [];
    for (const key of pods.keys()) {
      const pod = pods.get(key);
      if (!pod || key === exceptKey) continue;
      const promised = assumed.get(key);
      if (promised && (promised.uid !== pod.metadata?.uid || pod.spec?.nodeName)) assumed.delete(key);
      const nodeName = pod.spec?.nodeName || assumed.get(key)?.nodeName;
      if (nodeName) bound.push({ pod, nodeName });
    }
    return bound;
  };

  const patchStatus = async (pod: V1Pod, status: Record<string, unknown>) => {
    const { namespace = '', name = '', uid } = pod.metadata ?? {};
    try {
      await core.patchNamespacedPodStatus(
        { namespace, name, body: { metadata: { uid }, status } },
        mergePatch,
      );
      return true;
    } catch (error) {
      // Gone, or replaced by a Pod of the same name: its own events bring the next look.
      if (httpStatusOf(error) === 404 || httpStatusOf(error) === 409) return false;
      throw error;
    }
  };

  const bind = async (key: string, pod: V1Pod) => {
    const nodeList = [...nodes.keys()].flatMap((nodeKey) => nodes.get(nodeKey) ?? []);
    const plan = planBinding(pod, nodeList, boundPods(key));
    const { namespace = '', name = '', uid = '' } = pod.metadata ?? {};
    if (plan.kind === 'unschedulable') {
      if (unschedulable.get(key) === plan.message) return;
      const condition = {
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: plan.message,
        lastTransitionTime: new Date().toISOString(),
      };
      if (await patchStatus(pod, { phase: 'Pending', conditions: [condition] }))
        unschedulable.set(key, plan.message);
      return;
    }
    try {
      await core.createNamespacedPodBinding({
        namespace,
        name,
        body: { metadata: { name, namespace, uid }, target: { kind: 'Node', name: plan.nodeName } },
      });
      assumed.set(key, { uid, nodeName: plan.nodeName });
      unschedulable.delete(key);
      log(`${key}: bound to ${plan.nodeName}`);
    } catch (error) {
      // Bound by someone else meanwhile, or gone: the watch tells which.
      if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
    }
  };

  const writeStatus = async (pod: V1Pod, run: PodRun, knobs: PodKnobs) => {
    const planned = planPodStatus({
      pod,
      containers: run.sandbox ? viewsOf(run.sandbox) : undefined,
      podIp: run.podIp,
      startTime: run.startTime,
      neverReady: knobs.neverReady,
    });
    const conditions = planned.conditions.map((condition: PlannedCondition) => {
      const since = run.conditionSince.get(condition.type);
      const time = since?.status === condition.status ? since.time : new Date().toISOString();
      run.conditionSince.set(condition.type, { status: condition.status, time });
      return { ...condition, lastProbeTime: null, lastTransitionTime: time };
    });
    const status = { ...planned, conditions };
    const text = JSON.stringify(status);
    if (text === run.lastWritten) return;
    if (await patchStatus(pod, status)) run.lastWritten = text;
  };

  const tearDown = async (key: string, run: PodRun) => {
    runs.delete(key);
    ips.release(key);
    await run.sandbox?.remove();
  };

  const finishDeletion = async (key: string, pod: V1Pod, run: PodRun | undefined) => {
    const { namespace = '', name = '', uid } = pod.metadata ?? {};
    if (run?.sandbox) {
      const graceSeconds = pod.metadata?.deletionGracePeriodSeconds ?? defaultGraceSeconds;
      await run.sandbox.stop(graceSeconds * 1000);
    }
    try {
      // As the kubelet: once the containers have ended, the Pod goes for good, but only this very Pod.
      // With a body the apiserver reads no query parameters, so the grace period goes in the body too.
      const body = { gracePeriodSeconds: 0, preconditions: { uid } };
      await core.deleteNamespacedPod({ namespace, name, body });
      log(`${key}: deleted after its containers ended`);
    } catch (error) {
      if (httpStatusOf(error) !== 404 && httpStatusOf(error) !== 409) throw error;
    }
    if (run) await tearDown(key, run);
  };

  const reconcile = async (key: string) => {
    const { namespace } = splitKey(key);
    const scope = await options.scopeOf(namespace);
    if (scope.paused) return;
    const pod = pods.get(key);
    let run = runs.get(key);
    if (run && (!pod || pod.metadata?.uid !== run.uid)) {
      await tearDown(key, run);
      run = undefined;
    }
    if (!pod) {
      unschedulable.delete(key);
      reported.delete(key);
      assumed.delete(key);
      return;
    }
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) {
      const scheduler = pod.spec?.schedulerName;
      if (pod.metadata?.deletionTimestamp || (scheduler && scheduler !== 'default-scheduler')) return;
      const chained = binding.then(() => bind(key, pod));
      binding = chained.catch(() => {});
      return await chained;
    }
    if (!nodes.get(`/${nodeName}`)) return;
    if (pod.metadata?.deletionTimestamp) return await finishDeletion(key, pod, run);
    if (!run && isFinished(pod)) return;
    const knobs = knobsOf(pod, key);
    if (!run) {
      const podIp = pod.spec?.hostNetwork ? '127.0.0.1' : ips.addressOf(key);
      if (podIp === undefined) {
        log(`${key}: the agent's Pod IP range is exhausted, so it stays Pending`);
        return;
      }
      run = {
        uid: pod.metadata?.uid ?? '',
        podIp,
        startTime: new Date(),
        startDueAt: undefined,
        sandbox: undefined,
        conditionSince: new Map(),
        lastWritten: undefined,
      };
      runs.set(key, run);
    }
    if (!run.sandbox) {
      run.startDueAt ??= scope.now + knobs.startDelayMs;
      if (scope.now < run.startDueAt) {
        // Under a namespace clock only the clock's next move can make the delay pass; that move wakes the key.
        if (!scope.clocked) options.requeue(key, run.startDueAt - scope.now);
        return await writeStatus(pod, run, knobs);
      }
      const uid = pod.metadata?.uid ?? '';
      run.sandbox = new PodSandbox({
        pod,
        dir: join(options.dataDir, `${namespace}_${pod.metadata?.name ?? ''}_${uid}`),
        podIp: run.podIp,
        onChange: () => options.requeue(key),
        idle: options.isIdle(pod),
      });
      run.sandbox.start(knobs.failStart);
    }
    await writeStatus(pod, run, knobs);
  };

  return {
    reconcile,
    sandboxOf: (namespace, name) => runs.get(`${namespace}/${name}`)?.sandbox,
    knobsOf: (sandbox) => {
      const { namespace = '', name = '' } = sandbox.pod.metadata ?? {};
      return readPodKnobs((pods.get(`${namespace}/${name}`) ?? sandbox.pod).metadata?.annotations).knobs;
    },
    killAll: () => {
      for (const run of runs.values()) run.sandbox?.killNow();
    },
    removeAll: async () => {
      await Promise.all([...runs.entries()].map(([key, run]) => tearDown(key, run)));
    },
  };
}
