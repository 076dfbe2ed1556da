import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiregistrationV1Api, CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import { ensureKubevirtBinaries } from '../binaries.js';
import { startLoggedProcess } from '../logged-process.js';
import {
  exitDescription,
  freeLoopbackPort,
  stopProcess,
  tailOf,
  waitUntilUp,
} from '../process-supervision.js';
import { type FaultWebhook, startFaultWebhook } from './fault-webhook.js';
import { type HandlerStandIn, startHandlerStandIn } from './handler-stand-in.js';
import {
  generateInstall,
  installKubevirt,
  kubevirtNamespace,
  serviceAccountKubeconfig,
  serviceAccounts,
} from './install.js';

/** Options of {@link startRealKubevirt}. @category testing */
export interface RealKubevirtOptions {
  /** The node the handler stand-in plays virt-handler on (the node agent's, so it runs the launcher Pods). */
  nodeName: string;
  /** `status.allocatable` of that node beside KubeVirt's devices. */
  allocatable?: Record<string, string>;
  /** Receives a line per step, and the stand-in's lines. */
  log?: (line: string) => void;
}

/** What {@link startRealKubevirt} needs of the cluster. @category testing */
export interface RealKubevirtCluster {
  kubeConfig: KubeConfig;
  /** The apiserver's URL, which the programs' own kubeconfigs name. */
  server: string;
  /** The apiserver's CA. */
  caPem: string;
  /** A serving pair for 127.0.0.1 that the CA signed, for the fault webhook the apiserver calls. */
  serving: { certPem: string; keyPem: string };
  /** A folder for the install objects, the certificates, the kubeconfigs and the programs' logs. */
  dataDir: string;
}

/** KubeVirt's own virt-api and virt-controller on a local control plane. @category testing */
export interface RealKubevirt {
  /** The KubeVirt release that runs, `v1.9.0` unless `CORRAL_KUBEVIRT_VERSION` names another. */
  version: string;
  /** The node whose virt-handler the stand-in plays. */
  nodeName: string;
  /** The logs of virt-api and virt-controller. */
  logs: { virtApi: string; virtController: string };
  /** Stops virt-controller (SIGTERM): VMs, VMIs and clones stay as they are until {@link RealKubevirt.startController}. */
  stopController(): Promise<void>;
  /** Starts virt-controller again after {@link RealKubevirt.stopController}; resolves once it leads. */
  startController(): Promise<void>;
  /** Stops the stand-in, virt-controller and virt-api. Leaves every object in the cluster as it is. */
  stop(): Promise<void>;
}

// virt-controller's restarts after an exit, as a kubelet backs off a container that keeps exiting.
const minRestartDelayMs = 500;
const maxRestartDelayMs = 10_000;

// Short leases, so that a restarted virt-controller leads again within seconds, not the default 15 s.
const leaderElection = [
  '--leader-elect-lease-duration=4s',
  '--leader-elect-renew-deadline=3s',
  '--leader-elect-retry-period=1s',
];

async function isApiServiceAvailable(kubeConfig: KubeConfig, name: string): Promise<boolean> {
  const service = await kubeConfig.makeApiClient(ApiregistrationV1Api).readAPIService({ name });
  return service.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true;
}

/**
 * Runs KubeVirt's own virt-api and virt-controller (built by {@link ensureKubevirtBinaries}) against a control
 * plane, as virt-operator would deploy them: its install objects and certificates from virt-operator's own code,
 * each program with a token of its own service account, the webhooks and `subresources.kubevirt.io` pointed at
 * virt-api on loopback. A stand-in plays virt-handler on `nodeName` (docs/simulator.md says what it does); the
 * node agent must run there with `idlePods: isKubevirtNodePod`. Resolves once virt-api's APIService is
 * `Available` and virt-controller holds its leader Lease. virt-controller exits when it loses that Lease (a
 * freeze of etcd past its 3 s renew deadline); it is started again then, as its Deployment's kubelet would.
 *
 * @throws `VdiError` `CONTROL_PLANE_FAILED` with the program's last log lines when one does not come up.
 * @category testing
 */
export async function startRealKubevirt(
  cluster: RealKubevirtCluster,
  options: RealKubevirtOptions,
): Promise<RealKubevirt> {
  const log = options.log ?? (() => {});
  const { kubeConfig } = cluster;
  const binaries = await ensureKubevirtBinaries({ log });
  const dir = join(cluster.dataDir, 'kubevirt');
  mkdirSync(dir, { recursive: true });
  const { objects, certificates } = await generateInstall(binaries, dir);
  const [apiPort, controllerPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  await installKubevirt(kubeConfig, objects, certificates, apiPort);
  const kubeconfigOf = async (account: string) => {
    const path = join(dir, `${account}.kubeconfig`);
    const text = await serviceAccountKubeconfig(kubeConfig, account, cluster.server, cluster.caPem);
    writeFileSync(path, text, { mode: 0o600 });
    return { path, text };
  };
  const apiAccount = await kubeconfigOf(serviceAccounts.api);
  const controllerAccount = await kubeconfigOf(serviceAccounts.controller);
  const logs = { virtApi: join(dir, 'virt-api.log'), virtController: join(dir, 'virt-controller.log') };

  const children = new Set<ChildProcess>();
  let standIn: HandlerStandIn | undefined;
  let faults: FaultWebhook | undefined;
  const failed = (what: string, logPath: string) => (error: Error) => {
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `${what}: ${error.message}; its log ends:\n${tailOf(logPath)}`,
    );
  };

  let controller: ChildProcess | undefined;
  // Whether virt-controller should run: it exits when it loses its leader Lease (an etcd freeze past the renew
  // deadline), and its Deployment's kubelet would start it again.
  let controllerWanted = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let restartDelayMs = minRestartDelayMs;
  const launchController = async () => {
    const since = new Date();
    controller = startLoggedProcess(
      binaries.virtController,
      [
        `--kubeconfig=${controllerAccount.path}`,
        '--listen=127.0.0.1',
        `--port=${controllerPort}`,
        `--prom-cert-file=${certificates.controller.certPath}`,
        `--prom-key-file=${certificates.controller.keyPath}`,
        `--launcher-image=quay.io/kubevirt/virt-launcher:${binaries.version}`,
        ...leaderElection,
      ],
      logs.virtController,
    );
    const running = controller;
    children.add(running);
    running.once('exit', () => {
      children.delete(running);
      if (controller !== running || !controllerWanted) return;
      controller = undefined;
      // a controller that ran a while starts again at once; one that keeps exiting waits longer each time
      restartDelayMs = Date.now() - since.getTime() > 30_000 ? minRestartDelayMs : restartDelayMs * 2;
      const delayMs = Math.min(restartDelayMs, maxRestartDelayMs);
      log(`virt-controller exited (${exitDescription(running)}); starting it again in ${delayMs} ms`);
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (controllerWanted && !controller) {
          launchController().catch((error: Error) =>
            log(`virt-controller did not start again: ${error.message}`),
          );
        }
      }, delayMs);
    });
    const leases = kubeConfig.makeApiClient(CoordinationV1Api);
    await waitUntilUp(
      'virt-controller',
      async () => {
        const lease = await leases.readNamespacedLease({
          name: 'virt-controller',
          namespace: kubevirtNamespace,
        });
        const renewed = lease.spec?.renewTime ?? lease.spec?.acquireTime;
        return (
          lease.spec?.holderIdentity !== undefined && renewed !== undefined && new Date(renewed) >= since
        );
      },
      () => exitDescription(running),
      60_000,
    ).catch(failed('virt-controller did not lead', logs.virtController));
    log(`virt-controller ${binaries.version} leads`);
  };
  const startController = async () => {
    controllerWanted = true;
    if (!controller) await launchController();
  };
  const stopController = async () => {
    controllerWanted = false;
    clearTimeout(restartTimer);
    if (!controller) return;
    const stopping = controller;
    controller = undefined;
    await stopProcess(stopping);
  };
  const stop = async () => {
    await stopController();
    await faults?.stop();
    await standIn?.stop();
    for (const child of children) await stopProcess(child);
    children.clear();
  };

  try {
    faults = await startFaultWebhook(
      kubeConfig,
      { ...cluster.serving, clientCaPem: cluster.caPem, caPem: cluster.caPem },
      log,
    );
    // the handler first: virt-api is told where it serves consoles
    const handler = await startHandlerStandIn({
      kubeConfig,
      controllerKubeconfig: controllerAccount.text,
      nodeName: options.nodeName,
      allocatable: options.allocatable ?? { cpu: '8', memory: '16Gi', pods: '110' },
      version: binaries.version,
      certificates,
      log,
    });
    standIn = handler;
    const virtApi = startLoggedProcess(
      binaries.virtApi,
      [
        `--kubeconfig=${apiAccount.path}`,
        '--listen=127.0.0.1',
        `--port=${apiPort}`,
        `--tls-cert-file=${certificates.api.certPath}`,
        `--tls-key-file=${certificates.api.keyPath}`,
        `--handler-cert-file=${certificates.handlerClient.certPath}`,
        `--handler-key-file=${certificates.handlerClient.keyPath}`,
        `--console-server-port=${handler.consolePort}`,
      ],
      logs.virtApi,
    );
    children.add(virtApi);
    await waitUntilUp(
      'virt-api',
      () => isApiServiceAvailable(kubeConfig, 'v1.subresources.kubevirt.io'),
      () => exitDescription(virtApi),
      60_000,
    ).catch(failed('virt-api did not serve', logs.virtApi));
    log(`virt-api ${binaries.version} serves on https://127.0.0.1:${apiPort}`);
    await startController();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    version: binaries.version,
    nodeName: options.nodeName,
    logs,
    stopController,
    startController,
    stop,
  };
}
