import { createVdi, defaultNamespace, type KubeConfig, loadKubeConfig, type Vdi } from '../vdi.js';
import type { CliIo } from './terminal.js';

/** The cluster a command acts on, as the flags and the environment name it. */
export interface ClusterSession {
  kubeConfig: KubeConfig;
  /** `-n`, else `$CORRAL_NAMESPACE`, else `corral-vms`. */
  namespace: string;
  /** Whether `-n` named a namespace other than the default, so hints must repeat it. */
  namespaceFlagged: boolean;
  /** Who the CLI acts as when it acts as an administrator: `$USER`, else the kubeconfig user. */
  actor: string;
  vdi: Vdi;
}

/** The flags that choose the cluster. */
export interface ClusterFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

/** The namespace a command acts in: `-n`, else `$CORRAL_NAMESPACE`, else `corral-vms`; and whether `-n` chose it. */
export function resolveCliNamespace(
  flag: string | undefined,
  env: CliIo['env'],
): { namespace: string; flagged: boolean } {
  const fallback = env.CORRAL_NAMESPACE || defaultNamespace;
  const namespace = flag ?? fallback;
  return { namespace, flagged: namespace !== fallback };
}

/** Opens the cluster for a command. @throws `VdiError` `INVALID_INPUT` as `loadKubeConfig`. */
export function openClusterSession(flags: ClusterFlags, env: CliIo['env']): ClusterSession {
  const kubeConfig = loadKubeConfig(flags, env);
  const { namespace, flagged } = resolveCliNamespace(flags.namespace, env);
  const actor = env.USER?.trim() || kubeConfig.getCurrentUser()?.name || 'corral-vdi';
  return {
    kubeConfig,
    namespace,
    namespaceFlagged: flagged,
    actor,
    vdi: createVdi({ kubeConfig, namespace }),
  };
}
