import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { readNamespaceKnobs } from './fault-knobs.js';
import { startInformer } from './informer.js';
import { unlessNotFound } from './kube-calls.js';

/** How the simulator treats the objects of one namespace, from the namespace's knobs. */
export interface NamespaceScope {
  /** The time delays are measured against: the namespace's clock, or the simulator's. */
  now: number;
  /** Whether `now` is the namespace's own clock, which moves only when a test moves it. */
  clocked: boolean;
  paused: boolean;
}

/** The namespace knobs as the controllers read them. */
export interface NamespaceScopes {
  of(namespace: string): Promise<NamespaceScope>;
  stop(): void;
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
  const informer = await startInformer({
    kubeConfig,
    resource: 'namespaces',
    onChange: (key) => options.onChange(key.slice(1)),
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
      return { now: knobs.clock ?? Date.now(), clocked: knobs.clock !== undefined, paused: knobs.paused };
    },
    stop: () => informer.stop(),
  };
}
