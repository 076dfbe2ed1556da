import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type KubernetesObject, loadAllYaml } from '@kubernetes/client-node';

const buildScript = fileURLToPath(new URL('../../scripts/build-helm.sh', import.meta.url));

/** The chart in deploy/helm. */
export const chartPath = fileURLToPath(new URL('../../deploy/helm/corral-vdi', import.meta.url));

let binary: string | undefined;

/**
 * The path of Helm, from the binary cache; scripts/build-helm.sh builds it there first when it is missing (minutes,
 * once per machine) and answers at once when it is not.
 */
export function helmBinary(): string {
  binary ??= join(
    execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(),
    'helm',
  );
  return binary;
}

/** What one run of Helm did. */
export interface HelmRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `helm <args>` with a home of the test's own (its discovery cache included), so no developer's repositories,
 * plugins or kubeconfig take part.
 */
export function runHelm(args: readonly string[], env: Record<string, string> = {}): Promise<HelmRun> {
  const home = fileURLToPath(new URL('../../node_modules/.cache/helm', import.meta.url));
  return new Promise((resolve) => {
    execFile(
      helmBinary(),
      args,
      {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          HELM_CACHE_HOME: join(home, 'cache'),
          HELM_CONFIG_HOME: join(home, 'config'),
          HELM_DATA_HOME: join(home, 'data'),
          ...env,
        },
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** `--set` arguments, one a value: a list is written `{a,b}`, null as `null`. */
function setArgs(values: Record<string, string | number | boolean | null | string[]>): string[] {
  return Object.entries(values).flatMap(([key, value]) => [
    '--set',
    `${key}=${Array.isArray(value) ? `{${value.join(',')}}` : String(value)}`,
  ]);
}

/** `helm template` of the chart into `namespace` with `values` set; fails with Helm's output when it refuses. */
export async function renderChart(
  namespace: string,
  values: Record<string, string | number | boolean | null | string[]> = {},
): Promise<KubernetesObject[]> {
  const run = await runHelm([
    'template',
    'corral-vdi',
    chartPath,
    '--namespace',
    namespace,
    ...setArgs(values),
  ]);
  if (run.code !== 0) throw new Error(`helm template failed (${run.code}):\n${run.stderr}`);
  return (loadAllYaml(run.stdout) as Array<KubernetesObject | null>).filter(
    (object): object is KubernetesObject => object !== null,
  );
}

/** `helm template` as {@link renderChart}, resolving with Helm's error output when it refuses the values. */
export async function renderError(
  values: Record<string, string | number | boolean | null | string[]>,
): Promise<string> {
  const run = await runHelm([
    'template',
    'corral-vdi',
    chartPath,
    '--namespace',
    'corral-system',
    ...setArgs(values),
  ]);
  if (run.code === 0) throw new Error('expected helm template to refuse the values');
  return run.stderr;
}
