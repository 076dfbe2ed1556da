import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';
import { ensureControlPlaneBinaries } from './binaries.js';
import { createCertificateAuthority, createSigningKeyPair, issueCertificate } from './certificates.js';
import {
  type KubevirtSimulator,
  type KubevirtSimulatorOptions,
  startKubevirtSimulator,
} from './kubevirt/index.js';
import { isKubevirtNodePod, type RealKubevirt, startRealKubevirt } from './kubevirt-real/index.js';
import {
  type KubevirtWrite,
  type KubevirtWriteRecorder,
  startKubevirtWriteRecorder,
} from './kubevirt-writes.js';
import { startLoggedProcess as startProcess } from './logged-process.js';
import { type NodeAgent, type NodeAgentOptions, startNodeAgent } from './node-agent/index.js';
import {
  exitDescription,
  freeLoopbackPort,
  killProcess,
  stopProcess,
  tailOf,
  waitUntilUp,
} from './process-supervision.js';

/** PEM material of a {@link LocalCluster}, for servers that take part in it (the simulator's aggregated API). @category testing */
export interface LocalClusterCertificates {
  /** The CA that signs the apiserver's serving certificate and every client certificate. */
  caPem: string;
  /** A serving certificate for `localhost` and `127.0.0.1`, signed by the CA. */
  servingCertPem: string;
  servingKeyPem: string;
  /** The CA of the apiserver's front-proxy client certificate; an aggregated API trusts `X-Remote-User` only from it. */
  frontProxyCaPem: string;
  /** The client certificate the apiserver presents to kubelets (`--kubelet-client-certificate`), signed by the CA. */
  kubeletClientCertPem: string;
}

/**
 * What another process needs to use a running {@link LocalCluster}: plain data, so it passes through `JSON` and
 * `structuredClone` (a test runner's global set-up hands it to its workers this way). @category testing
 */
export interface LocalClusterConnection {
  /** The apiserver's URL, `https://127.0.0.1:<port>`. */
  server: string;
  /** The administrator's kubeconfig file. */
  kubeconfigPath: string;
  /** The cluster's data folder; its CA signs the certificates of {@link LocalClusterAccess.userKubeConfig}. */
  dataDir: string;
  certificates: LocalClusterCertificates;
  /**
   * The apiserver's audit log of Lease writes (JSON lines, `audit.k8s.io/v1` events at level `Request`), when the
   * cluster was started with {@link StartLocalClusterOptions.auditLeaseWrites}.
   */
  leaseAuditLogPath?: string;
}

/** A running local control plane as every process that uses it sees it. @category testing */
export interface LocalClusterAccess {
  /** An administrator's configuration (group `system:masters`). */
  kubeConfig: KubeConfig;
  /** The administrator's kubeconfig as a file, for kubectl and the CLI. */
  kubeconfigPath: string;
  /** The apiserver's URL, `https://127.0.0.1:<port>`. */
  server: string;
  certificates: LocalClusterCertificates;
  /** The same cluster as plain data, for {@link connectLocalCluster} in another process. */
  connection: LocalClusterConnection;
  /**
   * A configuration for a non-admin user with a client certificate: `name` is the user, `groups` its groups.
   * RBAC applies to it as to any user.
   */
  userKubeConfig(name: string, groups?: string[]): KubeConfig;
  /** Writes {@link LocalClusterAccess.userKubeConfig}'s configuration to a kubeconfig file and returns its path. */
  userKubeconfigPath(name: string, groups?: string[]): string;
}

/** A running etcd + kube-apiserver on loopback, as the process that started it sees it. @category testing */
export interface LocalCluster extends LocalClusterAccess {
  /** The KubeVirt simulator, when it runs (`kubevirt: 'simulated'`, unless it was turned off). */
  simulator: KubevirtSimulator | undefined;
  /** KubeVirt's own virt-api and virt-controller, when they run (`kubevirt: 'real'`). */
  realKubevirt: RealKubevirt | undefined;
  /** The node agent that runs Pods, unless it was turned off. */
  nodeAgent: NodeAgent | undefined;
  /** How long the start took, in milliseconds. */
  startupMs: number;
  /** Stops the simulator, kube-apiserver and etcd, and removes the data folder. Safe to call twice. */
  stop(): Promise<void>;
  /**
   * Kills the kube-apiserver (`SIGKILL`, as a crash) and starts it again on the same port, with the same
   * certificates and the same etcd; resolves once `/readyz` answers. Objects in etcd survive.
   *
   * @throws `VdiError` `CONTROL_PLANE_FAILED` with the last log lines when it does not come back.
   */
  restartApiserver(): Promise<void>;
  /**
   * Freezes etcd (`SIGSTOP`) for `ms` milliseconds, then lets it go on (`SIGCONT`); resolves once it runs again.
   * Requests the apiserver sends meanwhile wait, as with a stalled disk or network. On Linux the call returns its
   * promise only once every etcd thread shows as stopped, so a request made right after it waits for the pause.
   *
   * @throws `VdiError` `INVALID_INPUT` for a negative or non-finite `ms`, or while etcd is already frozen;
   *   `CONTROL_PLANE_FAILED` when etcd has not stopped 5 s after the signal.
   */
  pauseEtcd(ms: number): Promise<void>;
  /**
   * Every create, update and patch of KubeVirt's groups that the administrator's configuration sent so far, as
   * sent and as the apiserver answered; only with `recordKubevirtWrites`.
   *
   * @throws `VdiError` `INVALID_INPUT` when the cluster was started without `recordKubevirtWrites`.
   */
  kubevirtWrites(): KubevirtWrite[];
}

/** Options of {@link startLocalCluster}. @category testing */
export interface StartLocalClusterOptions {
  /**
   * Which KubeVirt runs: `'real'`, KubeVirt's own virt-api and virt-controller with a stand-in of virt-handler on
   * the node agent's node ({@link startRealKubevirt}; needs the node agent and Go to build them once),
   * `'simulated'`, the TypeScript simulator, or `'none'`, no KubeVirt at all (a test that installs what it needs).
   * Default: the environment's `CORRAL_KUBEVIRT` (`real` or `simulated`), else `'real'`.
   */
  kubevirt?: KubevirtKind;
  /** With `kubevirt: 'simulated'`: the simulator's options. */
  simulator?: KubevirtSimulatorOptions;
  /**
   * Start the node agent that runs Pods (default), with these options, or not at all (`false`). Its node defaults
   * to the simulator's, so VMIs and Pods report one node.
   */
  nodeAgent?: boolean | NodeAgentOptions;
  /**
   * Record each write to KubeVirt's API groups (`kubevirt.io`, `clone.kubevirt.io`) for
   * {@link LocalCluster.kubevirtWrites}, so that a test compares what it sent with what was stored: the
   * administrator's configuration (and with it the simulator's) then reaches the apiserver through a recording
   * proxy on loopback. `userKubeConfig` users go to the apiserver directly and are not recorded. Off by default.
   */
  recordKubevirtWrites?: boolean;
  /**
   * Have the apiserver log every Lease write (create, update, patch, delete) with its user, its times and what
   * it sent, to {@link LocalClusterConnection.leaseAuditLogPath}: a test then knows which client ended or wrote
   * a claim, and when the apiserver did it. The log grows with every write; off by default.
   */
  auditLeaseWrites?: boolean;
  /** Receives progress lines: binaries found or built, processes started. */
  log?: (line: string) => void;
}

/** Which KubeVirt a local cluster runs. @category testing */
export type KubevirtKind = 'real' | 'simulated' | 'none';

/** The KubeVirt a local cluster runs unless its options say: `CORRAL_KUBEVIRT`, else `'real'`. @category testing */
export function defaultKubevirtKind(): 'real' | 'simulated' {
  const chosen = process.env.CORRAL_KUBEVIRT?.trim();
  if (chosen === undefined || chosen === '') return 'real';
  if (chosen === 'real' || chosen === 'simulated') return chosen;
  throw new VdiError(
    'INVALID_INPUT',
    `CORRAL_KUBEVIRT is "${chosen}"; set it to real or simulated, or unset it.`,
  );
}

const clusterName = 'corral-vdi-local';

function dataRoot(): string {
  // etcd fsyncs on every write; memory-backed storage keeps big tests fast.
  return existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
}

// Lease writes at level Request (what was sent, not what came back), every other request not at all.
const leaseAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Request
    verbs: [create, update, patch, delete]
    resources: [{ group: coordination.k8s.io, resources: [leases] }]
  - level: None
`;

function leaseAuditArgs(dir: string, logPath: string): string[] {
  const policyPath = join(dir, 'lease-audit-policy.yaml');
  writeFileSync(policyPath, leaseAuditPolicy);
  // blocking: each event is written as its request ends, and none is dropped under load
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${logPath}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
  ];
}

// The timer is the fault itself: the process stays frozen for exactly that long, whatever the caller does.
function freezerOf(child: ChildProcess, name: string): (ms: number) => Promise<void> {
  let frozen = false;
  return async (ms) => {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new VdiError(
        'INVALID_INPUT',
        `Pause ${name} for a number of milliseconds of 0 or more, not ${ms}.`,
      );
    }
    if (frozen) throw new VdiError('INVALID_INPUT', `${name} is paused already; wait for that pause to end.`);
    frozen = true;
    child.kill('SIGSTOP');
    try {
      waitUntilStopped(child, name);
    } catch (error) {
      child.kill('SIGCONT');
      frozen = false;
      throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, ms));
    child.kill('SIGCONT');
    frozen = false;
  };
}

const stopWaitMs = 5_000;

/**
 * Waits, blocking, until every thread of a process that was sent SIGSTOP shows as stopped in /proc. The signal is
 * only queued by kill(): on a loaded machine etcd was seen to answer a write 5 ms after it, so a write sent next
 * could land before the pause had begun.
 */
function waitUntilStopped(child: ChildProcess, name: string): void {
  const tasks = `/proc/${child.pid}/task`;
  // without /proc (not Linux) there is nothing to watch: the pause begins when the signal lands
  if (!existsSync(tasks)) return;
  const tick = new Int32Array(new SharedArrayBuffer(4));
  const deadline = performance.now() + stopWaitMs;
  for (;;) {
    const states = readdirSync(tasks).map((task) => {
      const stat = readFileSync(join(tasks, task, 'stat'), 'utf8');
      // the state follows the command name, which is in parentheses and may hold spaces
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    });
    if (states.every((state) => state === 'T' || state === 't')) return;
    if (performance.now() > deadline) {
      throw new VdiError('CONTROL_PLANE_FAILED', `${name} did not stop within ${stopWaitMs} ms of SIGSTOP.`);
    }
    Atomics.wait(tick, 0, 0, 1);
  }
}

// A process that outlives a killed parent ends the children and removes the data folder within a second.
function startOrphanReaper(children: ChildProcess[], dir: string): ChildProcess {
  const pids = children.map((child) => String(child.pid));
  const script =
    'parent=$1; dir=$2; shift 2; while kill -0 "$parent" 2>/dev/null; do sleep 1; done; kill -9 "$@" 2>/dev/null; rm -rf "$dir"';
  const reaper = spawn('bash', ['-c', script, 'corral-vdi-reaper', String(process.pid), dir, ...pids], {
    detached: true,
    stdio: 'ignore',
  });
  reaper.unref();
  return reaper;
}

function httpsGet(url: string, ca: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function kubeConfigFor(
  server: string,
  caPem: string,
  user: { name: string; token?: string; certPem?: string; keyPem?: string },
) {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: clusterName, server, caData: base64(caPem), skipTLSVerify: false }],
    users: [
      user.token
        ? { name: user.name, token: user.token }
        : { name: user.name, certData: base64(user.certPem ?? ''), keyData: base64(user.keyPem ?? '') },
    ],
    contexts: [{ name: clusterName, cluster: clusterName, user: user.name }],
    currentContext: clusterName,
  });
  return config;
}

function accessOf(connection: LocalClusterConnection, kubeConfig: KubeConfig): LocalClusterAccess {
  const { server, dataDir, certificates } = connection;
  const ca = {
    certPath: join(dataDir, 'ca.crt'),
    keyPath: join(dataDir, 'ca.key'),
    certPem: certificates.caPem,
    keyPem: '',
  };
  // Random file names: processes that share the cluster issue users into the same folder.
  const fileName = () => `user-${randomBytes(6).toString('hex')}`;
  const userKubeConfig = (name: string, groups: string[] = []) => {
    if (!name.trim()) throw new VdiError('INVALID_INPUT', 'userKubeConfig needs a non-empty user name.');
    const cert = issueCertificate(dataDir, fileName(), ca, {
      kind: 'client',
      commonName: name,
      organizations: groups,
    });
    return kubeConfigFor(server, certificates.caPem, { name, certPem: cert.certPem, keyPem: cert.keyPem });
  };
  const userKubeconfigPath = (name: string, groups: string[] = []) => {
    const path = join(dataDir, `kubeconfig-${fileName()}`);
    writeFileSync(path, userKubeConfig(name, groups).exportConfig(), { mode: 0o600 });
    return path;
  };
  return {
    kubeConfig,
    kubeconfigPath: connection.kubeconfigPath,
    server,
    certificates,
    connection,
    userKubeConfig,
    userKubeconfigPath,
  };
}

/**
 * Uses a local control plane that another process started, from its {@link LocalClusterAccess.connection}: the
 * administrator's configuration and new users, without the start's simulator or `stop` (its owner stops it).
 *
 * @example
 * ```ts
 * // in a worker of a test runner whose global set-up started the cluster and provided `cluster.connection`
 * const cluster = connectLocalCluster(inject('localCluster'));
 * const vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace: 'corral-vms' });
 * ```
 * @throws `VdiError` `INVALID_INPUT` when the kubeconfig file or the data folder is missing.
 * @category testing
 */
export function connectLocalCluster(connection: LocalClusterConnection): LocalClusterAccess {
  if (!existsSync(connection.kubeconfigPath) || !existsSync(join(connection.dataDir, 'ca.key'))) {
    throw new VdiError(
      'INVALID_INPUT',
      `No local control plane at ${connection.dataDir}: its kubeconfig or CA is missing; was it stopped?`,
    );
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(connection.kubeconfigPath);
  return accessOf(connection, kubeConfig);
}

/**
 * Starts etcd and a real kube-apiserver on free loopback ports, with TLS, RBAC, a static-token administrator,
 * client-certificate users and, unless turned off, the KubeVirt simulator and the node agent that runs Pods
 * (with the kubelet client certificate and `--kubelet-*` flags it needs for exec and logs). Binaries come from
 * {@link ensureControlPlaneBinaries}. The data folder is temporary; {@link LocalCluster.stop} removes it, and a
 * small reaper process removes it and ends etcd and kube-apiserver within a second when this process is killed.
 *
 * @example
 * ```ts
 * const cluster = await startLocalCluster();
 * try {
 *   const vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace: 'corral-vms' });
 * } finally {
 *   await cluster.stop();
 * }
 * ```
 * @throws `VdiError` `CONTROL_PLANE_FAILED` with the processes' last log lines when a start fails.
 * @category testing
 */
export async function startLocalCluster(options: StartLocalClusterOptions = {}): Promise<LocalCluster> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const kubevirtKind = options.kubevirt ?? defaultKubevirtKind();
  if (kubevirtKind === 'real' && options.nodeAgent === false) {
    throw new VdiError(
      'INVALID_INPUT',
      "KubeVirt's own controllers need the node agent to run their launcher Pods; leave nodeAgent on, or choose kubevirt: 'simulated' or 'none'.",
    );
  }
  const binaries = await ensureControlPlaneBinaries({ log });
  const dir = mkdtempSync(join(dataRoot(), 'corral-vdi-cluster-'));
  const children: ChildProcess[] = [];
  let reaper: ChildProcess | undefined;
  let simulator: KubevirtSimulator | undefined;
  let realKubevirt: RealKubevirt | undefined;
  let nodeAgent: NodeAgent | undefined;
  let recorder: KubevirtWriteRecorder | undefined;

  const killNow = () => {
    for (const child of children) child.kill('SIGKILL');
  };
  process.once('exit', killNow);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await realKubevirt?.stop();
    await nodeAgent?.stop();
    await simulator?.stop();
    await recorder?.close();
    // a frozen process handles SIGTERM only once it runs again
    for (const child of children) child.kill('SIGCONT');
    for (const child of [...children].reverse()) await stopProcess(child);
    process.removeListener('exit', killNow);
    // waited for, so that nothing of the cluster runs once stop resolves; ref'd, or its exit never comes in a
    // process with nothing else left to do
    if (reaper) {
      reaper.ref();
      await killProcess(reaper);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const ca = createCertificateAuthority(dir, 'ca');
    const frontProxyCa = createCertificateAuthority(dir, 'front-proxy-ca');
    const serving = issueCertificate(dir, 'serving', ca, {
      kind: 'server',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    const proxyClient = issueCertificate(dir, 'front-proxy-client', frontProxyCa, {
      kind: 'client',
      commonName: 'front-proxy-client',
      organizations: [],
    });
    // The apiserver's identity towards kubelets: the node agent serves exec, attach and logs to it alone.
    const kubeletClient = issueCertificate(dir, 'kubelet-client', ca, {
      kind: 'client',
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
    });
    const signing = createSigningKeyPair(dir);
    const adminToken = randomBytes(24).toString('hex');
    const tokenFile = join(dir, 'tokens.csv');
    writeFileSync(tokenFile, `${adminToken},corral-vdi-admin,corral-vdi-admin,system:masters\n`);

    const leaseAuditLogPath = options.auditLeaseWrites ? join(dir, 'lease-audit.log') : undefined;
    const [etcdClientPort, etcdPeerPort, apiPort] = [
      await freeLoopbackPort(),
      await freeLoopbackPort(),
      await freeLoopbackPort(),
    ];
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcdLog = join(dir, 'etcd.log');
    const etcd = startProcess(
      binaries.etcd,
      [
        '--name=default',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--log-level=warn',
        '--logger=zap',
      ],
      etcdLog,
    );
    children.push(etcd);
    reaper = startOrphanReaper(children, dir);
    await waitUntilUp(
      'etcd',
      async () => (await fetch(`${etcdUrl}/health`)).ok,
      () => exitDescription(etcd),
      30_000,
    ).catch((error: Error) => {
      throw new VdiError('CONTROL_PLANE_FAILED', `${error.message}; its log ends:\n${tailOf(etcdLog)}`);
    });
    log(`etcd ready on ${etcdUrl}`);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiLog = join(dir, 'kube-apiserver.log');
    const apiserver = startProcess(
      binaries.kubeApiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--tls-cert-file=${serving.certPath}`,
        `--tls-private-key-file=${serving.keyPath}`,
        `--client-ca-file=${ca.certPath}`,
        `--service-account-key-file=${signing.publicKeyPath}`,
        `--service-account-signing-key-file=${signing.privateKeyPath}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        `--token-auth-file=${tokenFile}`,
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.96.0.0/24',
        '--disable-admission-plugins=ServiceAccount',
        '--endpoint-reconciler-type=none',
        `--requestheader-client-ca-file=${frontProxyCa.certPath}`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        `--proxy-client-cert-file=${proxyClient.certPath}`,
        `--proxy-client-key-file=${proxyClient.keyPath}`,
        `--kubelet-client-certificate=${kubeletClient.certPath}`,
        `--kubelet-client-key=${kubeletClient.keyPath}`,
        `--kubelet-certificate-authority=${ca.certPath}`,
        '--kubelet-preferred-address-types=InternalIP',
        // the node agent serves exec and attach as websockets, as kubelets also do, and speaks no SPDY: the
        // apiserver passes a websocket through instead of translating it to SPDY on its way to the node
        '--feature-gates=TranslateStreamCloseWebsocketRequests=false',
        // The defaults throttle bulk tests of thousands of desktops on one machine.
        '--max-requests-inflight=2000',
        '--max-mutating-requests-inflight=1000',
        ...(leaseAuditLogPath === undefined ? [] : leaseAuditArgs(dir, leaseAuditLogPath)),
      ],
      apiLog,
    );
    children.push(apiserver);
    reaper.kill('SIGKILL');
    reaper = startOrphanReaper(children, dir);
    await waitUntilUp(
      'kube-apiserver',
      async () => (await httpsGet(`${server}/readyz`, ca.certPem, adminToken)).status === 200,
      () => exitDescription(apiserver),
      60_000,
    ).catch((error: Error) => {
      throw new VdiError('CONTROL_PLANE_FAILED', `${error.message}; its log ends:\n${tailOf(apiLog)}`);
    });
    log(`kube-apiserver ready on ${server}`);
    const faults = controlPlaneFaults({
      children,
      etcd,
      apiserver,
      apiLog,
      isApiReady: async () => (await httpsGet(`${server}/readyz`, ca.certPem, adminToken)).status === 200,
      watchChildren: () => {
        reaper?.kill('SIGKILL');
        reaper = startOrphanReaper(children, dir);
      },
    });

    if (options.recordKubevirtWrites) {
      recorder = await startKubevirtWriteRecorder({
        apiserver: server,
        caPem: ca.certPem,
        servingCertPem: serving.certPem,
        servingKeyPem: serving.keyPem,
      });
    }
    // the administrator, and so the simulator, reach the apiserver through the recorder when there is one
    const kubeConfig = kubeConfigFor(recorder?.url ?? server, ca.certPem, {
      name: 'corral-vdi-admin',
      token: adminToken,
    });
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
    const certificates: LocalClusterCertificates = {
      caPem: ca.certPem,
      servingCertPem: serving.certPem,
      servingKeyPem: serving.keyPem,
      frontProxyCaPem: frontProxyCa.certPem,
      kubeletClientCertPem: kubeletClient.certPem,
    };
    const access = accessOf(
      {
        server,
        kubeconfigPath,
        dataDir: dir,
        certificates,
        ...(leaseAuditLogPath ? { leaseAuditLogPath } : {}),
      },
      kubeConfig,
    );

    if (kubevirtKind === 'simulated') {
      simulator = await startKubevirtSimulator({ kubeConfig, certificates }, options.simulator ?? {});
      log('KubeVirt simulator ready');
    }
    if (options.nodeAgent !== false) {
      nodeAgent = await startNodeAgent(
        { kubeConfig, certificates },
        {
          nodeName: simulator?.nodeName,
          ...(kubevirtKind === 'real' ? { idlePods: isKubevirtNodePod } : {}),
          ...(typeof options.nodeAgent === 'object' ? options.nodeAgent : {}),
        },
      );
      log(`node agent ready on ${nodeAgent.kubeletUrl}`);
    }
    if (kubevirtKind === 'real' && nodeAgent) {
      realKubevirt = await startRealKubevirt(
        {
          kubeConfig,
          server,
          caPem: ca.certPem,
          serving: { certPem: serving.certPem, keyPem: serving.keyPem },
          dataDir: dir,
        },
        { nodeName: nodeAgent.nodeName, log },
      );
    }
    const kubevirtWrites = () => {
      if (!recorder) {
        throw new VdiError(
          'INVALID_INPUT',
          'This cluster does not record KubeVirt writes; start it with startLocalCluster({ recordKubevirtWrites: true }).',
        );
      }
      return recorder.writes();
    };
    return {
      ...access,
      simulator,
      realKubevirt,
      nodeAgent,
      startupMs: Date.now() - started,
      stop,
      kubevirtWrites,
      ...faults,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The running processes of one local cluster, as {@link controlPlaneFaults} breaks them. */
interface FaultablePlane {
  children: ChildProcess[];
  etcd: ChildProcess;
  apiserver: ChildProcess;
  apiLog: string;
  isApiReady: () => Promise<boolean>;
  /** Starts the orphan reaper again, so that it knows a restarted process. */
  watchChildren: () => void;
}

function controlPlaneFaults(plane: FaultablePlane): Pick<LocalCluster, 'restartApiserver' | 'pauseEtcd'> {
  return {
    async restartApiserver() {
      const { apiserver } = plane;
      await killProcess(apiserver);
      plane.children.splice(plane.children.indexOf(apiserver), 1);
      const next = startProcess(apiserver.spawnfile, apiserver.spawnargs.slice(1), plane.apiLog);
      plane.apiserver = next;
      plane.children.push(next);
      plane.watchChildren();
      await waitUntilUp('kube-apiserver', plane.isApiReady, () => exitDescription(next), 60_000).catch(
        (error: Error) => {
          throw new VdiError(
            'CONTROL_PLANE_FAILED',
            `${error.message}; its log ends:\n${tailOf(plane.apiLog)}`,
          );
        },
      );
    },
    pauseEtcd: freezerOf(plane.etcd, 'etcd'),
  };
}
