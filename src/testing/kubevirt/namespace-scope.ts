import { CoreV1Api, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import { readNamespaceKnobs } from './fault-knobs.js';
import { type CachedObject, startInformer } from './informer.js';
import { unlessNotFound } from './kube-calls.js';

/** How the simulator treats the objects of one namespace, from the namespace's knobs. */
export interface NamespaceScope {
  /** The time delays are measured against: the namespace's clock, or the simulator's. */
  now: number;
  /** Whether `now` is the namespace's own clock, which moves only when a test moves it. */
  clocked: boolean;
  paused: boolean;
  /** The namespace's resourceVersion as read. */
  version: bigint;
}

/** The namespace knobs as the controllers read them. */
export interface NamespaceScopes {
  of(namespace: string): Promise<NamespaceScope>;
  /**
   * The namespace's clock when the cluster was at `resourceVersion` (the version of an event), from `scope` as
   * `of` just read it, so a delay counted from that event does not move when the clock moved before the event was
   * handled. `undefined` while the watch has not delivered `scope`'s version; that version's event looks again.
   */
  clockAt(namespace: string, scope: NamespaceScope, resourceVersion: string | undefined): number | undefined;
  stop(): void;
}

/** One version of a namespace's clock knob, as the watch delivered it. */
interface ClockVersion {
  resourceVersion: bigint;
  clock: number | undefined;
}

/**
 * Watches Namespaces and calls `onChange` with the name of each one that changed, so the controllers look again
 * at its objects; `of` reads a namespace afresh, since an object's event may arrive before its namespace's.
 */
export async function startNamespaceScopes(options: {
  kubeConfig: KubeConfig;
  onChange: (namespace: string) => void;
  log: (line: string) => void;
}): Promise<NamespaceScopes> {
  const { kubeConfig, log } = options;
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const reported = new Map<string, string>();
  // each namespace's clock versions in the order the watch delivered them, which is the order of their versions
  const clockHistory = new Map<string, ClockVersion[]>();
  const informer = await startInformer<V1Namespace & CachedObject>({
    kubeConfig,
    resource: 'namespaces',
    onChange: (key, found) => {
      const namespace = key.slice(1);
      if (found === undefined) clockHistory.delete(namespace);
      else {
        const history = clockHistory.get(namespace) ?? [];
        const { clock } = readNamespaceKnobs(found.metadata?.annotations).knobs;
        history.push({ resourceVersion: BigInt(found.metadata?.resourceVersion ?? '0'), clock });
        clockHistory.set(namespace, history);
      }
      options.onChange(namespace);
    },
    log,
  });
  return {
    of: async (namespace) => {
      const found = await unlessNotFound(core.readNamespace({ name: namespace }));
      const { knobs, problems } = readNamespaceKnobs(found?.metadata?.annotations);
      const problemText = problems.join('; ');
      if (problemText && reported.get(namespace) !== problemText)
        log(`namespace ${namespace}: ${problemText}`);
      reported.set(namespace, problemText);
      return {
        now: knobs.clock ?? Date.now(),
        clocked: knobs.clock !== undefined,
        paused: knobs.paused,
        version: BigInt(found?.metadata?.resourceVersion ?? '0'),
      };
    },
    clockAt: (namespace, scope, resourceVersion) => {
      // versions grow across the whole cluster, so a namespace unchanged since the event still shows its clock
      if (!scope.clocked || resourceVersion === undefined || scope.version < BigInt(resourceVersion))
        return scope.now;
      const history = clockHistory.get(namespace) ?? [];
      if ((history.at(-1)?.resourceVersion ?? 0n) < scope.version) return undefined;
      const before = history.findLast((version) => version.resourceVersion < BigInt(resourceVersion));
      return before?.clock ?? scope.now;
    },
    stop: () => informer.stop(),
  };
}
