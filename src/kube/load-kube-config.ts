import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';

/** Where {@link loadKubeConfig} looks, as the CLI's flags name it. */
export interface KubeConfigSource {
  /** A kubeconfig file; else the files of `$KUBECONFIG`, else `~/.kube/config`, else in-cluster. */
  kubeconfig?: string | undefined;
  /** A context of the kubeconfig to switch to. */
  context?: string | undefined;
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
export function loadKubeConfig(
  flags: KubeConfigSource,
  env: Readonly<Record<string, string | undefined>>,
): KubeConfig {
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
