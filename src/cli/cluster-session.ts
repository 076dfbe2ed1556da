import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';
import { createVdi, defaultNamespace, type Vdi } from '../vdi.js';
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

const noKubeconfig =
  'No kubeconfig found: pass --kubeconfig PATH or set KUBECONFIG. To try the CLI on this machine, run ' +
  '`corral-vdi dev-cluster up` and export the KUBECONFIG it prints.';

function loadFile(config: KubeConfig, path: string): void {
  if (!existsSync(path)) {
    throw new VdiError(
      'INVALID_INPUT',
      `The kubeconfig ${path} does not exist; pass the path of an existing kubeconfig file.`,
    );
  }
  try {
    config.loadFromFile(path);
  } catch (error) {
    throw new VdiError(
      'INVALID_INPUT',
      `Cannot read the kubeconfig ${path}: ${(error as Error).message}; fix or replace the file.`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Loads the kubeconfig as kubectl does: `--kubeconfig`, else the files of `$KUBECONFIG` merged (first one wins),
 * else `~/.kube/config`, else the in-cluster service account; then switches to `--context` when given.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when no kubeconfig is found, a file is missing or unreadable, or the
 *   context does not exist.
 */
export function loadKubeConfig(flags: ClusterFlags, env: CliIo['env']): KubeConfig {
  const config = new KubeConfig();
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((path) => path !== '');
  if (flags.kubeconfig !== undefined) loadFile(config, flags.kubeconfig);
  else if (listed.length > 0) {
    const present = listed.filter((path) => existsSync(path));
    const [first, ...others] = present;
    if (first === undefined) {
      throw new VdiError(
        'INVALID_INPUT',
        `KUBECONFIG names no existing file (${listed.join(delimiter)}); point it at a kubeconfig file.`,
      );
    }
    loadFile(config, first);
    for (const path of others) {
      const next = new KubeConfig();
      loadFile(next, path);
      config.mergeConfig(next);
    }
  } else if (existsSync(join(env.HOME ?? homedir(), '.kube', 'config'))) {
    loadFile(config, join(env.HOME ?? homedir(), '.kube', 'config'));
  } else if (env.KUBERNETES_SERVICE_HOST) {
    config.loadFromCluster();
  } else {
    throw new VdiError('INVALID_INPUT', noKubeconfig);
  }
  if (flags.context !== undefined) {
    if (config.getContextObject(flags.context) === null) {
      const known = config.getContexts().map((context) => context.name);
      throw new VdiError(
        'INVALID_INPUT',
        `The kubeconfig has no context "${flags.context}"; pass one of: ${known.join(', ') || '(none)'}.`,
      );
    }
    config.setCurrentContext(flags.context);
  }
  if (config.getCurrentCluster() === null) {
    throw new VdiError(
      'INVALID_INPUT',
      `The kubeconfig's current context names no cluster; pass --context NAME or fix the kubeconfig.`,
    );
  }
  return config;
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

/** Opens the cluster for a command. @throws {@link VdiError} `INVALID_INPUT` as {@link loadKubeConfig}. */
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
