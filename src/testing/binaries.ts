import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VdiError } from '../errors.js';

/**
 * The Kubernetes release whose kube-apiserver the local control plane runs unless `CORRAL_KUBERNETES_VERSION`
 * names another (v1.34.x to v1.37.x are built). @category testing
 */
export const localKubernetesVersion = 'v1.37.2';

/** The Kubernetes release the binaries are looked for and built at: `CORRAL_KUBERNETES_VERSION` or the default. @category testing */
export function selectedKubernetesVersion(): string {
  return process.env.CORRAL_KUBERNETES_VERSION || localKubernetesVersion;
}

/** Where the control-plane binaries were found. @category testing */
export interface ControlPlaneBinaries {
  kubeApiserver: string;
  etcd: string;
  /** `KUBEBUILDER_ASSETS`, the cache, or a build that just ran. */
  source: 'kubebuilder-assets' | 'cache' | 'built';
}

/** Options of {@link ensureControlPlaneBinaries}. @category testing */
export interface EnsureBinariesOptions {
  /** Receives progress lines, such as those of a first build. */
  log?: (line: string) => void;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folder of cached control-plane binaries: `$XDG_CACHE_HOME/corral-vdi/bin/<version>` (default `~/.cache`). @category testing */
export function controlPlaneCacheDir(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'corral-vdi', 'bin', selectedKubernetesVersion());
}

function buildScriptPath(name: string): string {
  // The scripts ship in the package beside dist/ and src/.
  const candidates = [`../../scripts/${name}`, `../scripts/${name}`].map((relative) =>
    fileURLToPath(new URL(relative, import.meta.url)),
  );
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `The build script ${name} is missing from the package; reinstall @corral/vdi.`,
    );
  }
  return found;
}

/** Runs one of the package's build scripts, passing its progress lines on; rejects with its last lines. */
async function runBuildScript(
  name: string,
  what: string,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn('bash', [buildScriptPath(name)], { stdio: ['ignore', 'ignore', 'pipe'], env });
    let tail = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      tail = (tail + chunk).slice(-4000);
      for (const line of chunk.split('\n')) if (line.trim()) log(line);
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new VdiError('CONTROL_PLANE_FAILED', `Building ${what} failed:\n${tail.trim()}`)),
    );
  });
}

/**
 * Finds etcd and kube-apiserver: in `KUBEBUILDER_ASSETS` when it names a folder that has both, else in the
 * cache, else builds them into the cache from the Go module proxy (kube-apiserver of
 * {@link selectedKubernetesVersion} and the etcd release it is tested with; needs Go 1.26 and about ten minutes on
 * two cores the first time).
 *
 * @throws `VdiError` `CONTROL_PLANE_FAILED` when the build fails; the message names its log.
 * @category testing
 */
export async function ensureControlPlaneBinaries(
  options: EnsureBinariesOptions = {},
): Promise<ControlPlaneBinaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, 'kube-apiserver')) && isExecutable(join(assets, 'etcd'))) {
    return {
      kubeApiserver: join(assets, 'kube-apiserver'),
      etcd: join(assets, 'etcd'),
      source: 'kubebuilder-assets',
    };
  }
  const cacheDir = controlPlaneCacheDir();
  const cached = { kubeApiserver: join(cacheDir, 'kube-apiserver'), etcd: join(cacheDir, 'etcd') };
  if (isExecutable(cached.kubeApiserver) && isExecutable(cached.etcd)) return { ...cached, source: 'cache' };

  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(`control-plane binaries not found in ${cacheDir}; building them (a few minutes, once)`);
  await runBuildScript('build-control-plane.sh', 'the control-plane binaries', log);
  if (!isExecutable(cached.kubeApiserver) || !isExecutable(cached.etcd)) {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `The build finished but ${cacheDir} lacks kube-apiserver or etcd.`,
    );
  }
  return { ...cached, source: 'built' };
}

/**
 * The KubeVirt release whose virt-api and virt-controller the local control plane runs unless
 * `CORRAL_KUBEVIRT_VERSION` names another (v1.6.0 and newer are built). @category testing
 */
export const localKubevirtVersion = 'v1.9.0';

/** The KubeVirt release the controllers are looked for and built at: `CORRAL_KUBEVIRT_VERSION` or the default. @category testing */
export function selectedKubevirtVersion(): string {
  return process.env.CORRAL_KUBEVIRT_VERSION || localKubevirtVersion;
}

/** Where KubeVirt's own controllers were found. @category testing */
export interface KubevirtBinaries {
  version: string;
  virtApi: string;
  virtController: string;
  /** Writes KubeVirt's install objects and certificates with virt-operator's own code. */
  kubevirtInstall: string;
  /** `CORRAL_KUBEVIRT_ASSETS`, the cache, or a build that just ran. */
  source: 'kubevirt-assets' | 'cache' | 'built';
}

/** The folder of the cached KubeVirt binaries: `$XDG_CACHE_HOME/corral-vdi/bin/kubevirt-<version>`. @category testing */
export function kubevirtCacheDir(version = selectedKubevirtVersion()): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cacheHome, 'corral-vdi', 'bin', `kubevirt-${version}`);
}

/**
 * Finds KubeVirt's virt-api, virt-controller and kubevirt-install: in `CORRAL_KUBEVIRT_ASSETS` when it names a
 * folder that has all three (as `scripts/build-kubevirt.sh` prints it), else those of
 * {@link selectedKubevirtVersion} in the cache, else builds them
 * from the Go module proxy with `scripts/build-kubevirt.sh` (needs Go 1.26; about ten minutes on two cores the
 * first time, 2.3 GB of Go caches).
 *
 * @throws `VdiError` `CONTROL_PLANE_FAILED` when the build fails, with its last lines, how to run it again and
 *   how to run the simulator instead.
 * @category testing
 */
export async function ensureKubevirtBinaries(options: EnsureBinariesOptions = {}): Promise<KubevirtBinaries> {
  const version = selectedKubevirtVersion();
  const assets = process.env.CORRAL_KUBEVIRT_ASSETS;
  const dir = assets || kubevirtCacheDir(version);
  const found = {
    version,
    virtApi: join(dir, 'virt-api'),
    virtController: join(dir, 'virt-controller'),
    kubevirtInstall: join(dir, 'kubevirt-install'),
  };
  const complete = () => [found.virtApi, found.virtController, found.kubevirtInstall].every(isExecutable);
  if (complete()) return { ...found, source: assets ? 'kubevirt-assets' : 'cache' };
  if (assets) {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `CORRAL_KUBEVIRT_ASSETS is ${assets}, which lacks virt-api, virt-controller or kubevirt-install; point it at the folder scripts/build-kubevirt.sh prints, or unset it.`,
    );
  }
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(`KubeVirt ${version} controllers not found in ${dir}; building them (about ten minutes, once)`);
  await runBuildScript('build-kubevirt.sh', `KubeVirt ${version}'s controllers`, log, {
    ...process.env,
    CORRAL_KUBEVIRT_VERSION: version,
  }).catch((error: VdiError) => {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `${error.message}\nTo test without KubeVirt's own controllers meanwhile, run the simulator: CORRAL_KUBEVIRT=simulated, or startLocalCluster({ kubevirt: 'simulated' }) (docs/testing.md).`,
    );
  });
  if (!complete()) {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `The build finished but ${dir} lacks virt-api, virt-controller or kubevirt-install.`,
    );
  }
  return { ...found, source: 'built' };
}
