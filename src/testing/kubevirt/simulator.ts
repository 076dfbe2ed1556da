import {
  AdmissionregistrationV1Api,
  ApiregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1APIService,
  type V1Service,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import type { VirtualMachine, VirtualMachineClone, VirtualMachineInstance } from '../../kubevirt-types.js';
import {
  registerKubevirtWebhooks,
  unregisterKubevirtWebhooks,
  waitUntilKubevirtWebhooksAdmit,
} from './admission-webhook.js';
import { createCloneReconciler } from './clone-controller.js';
import { installKubevirtCrds } from './crds.js';
import { simulatorAnnotations } from './fault-knobs.js';
import { type Informer, startInformer } from './informer.js';
import { claimLoopbackRange, IpPool } from './ip-pool.js';
import { ensureNamespace, kubevirtResources, splitKey, unlessNotFound, upsert } from './kube-calls.js';
import { startNamespaceScopes } from './namespace-scope.js';
import { pause } from './pause.js';
import { startSubresourceServer, subresourceGroup, vmAdmissionPath } from './subresource-server.js';
import { createVmReconciler } from './vm-controller.js';
import { KeyedWorkQueue } from './work-queue.js';

/** Options of {@link startKubevirtSimulator}. @category testing */
export interface KubevirtSimulatorOptions {
  /** The node VMIs report, unless a VM's `sim.kubevirt.corral.dev/node` annotation names another. Default `sim-node-1`. */
  nodeName?: string;
  /**
   * The CIDR inside 127.0.0.0/8 that VMI addresses come from, one per VM, kept while the VM exists. Every such
   * address answers on Linux's loopback, so a test can listen on a VM's port 3389. Default: the first /16 from
   * `127.10.0.0/16` up that no other simulator or node agent on this machine holds (see `claimLoopbackRange`).
   */
  ipRange?: string;
  /**
   * The newest `clone.kubevirt.io` version served: `v1beta1` (stored, with `v1alpha1` served too, as KubeVirt
   * v1.5.0 and later do) or `v1alpha1` alone, as KubeVirt v1.4 and earlier. The clone CRD is cluster-wide, so
   * give a simulator with `v1alpha1` a cluster of its own. Default `v1beta1`.
   */
  cloneVersion?: 'v1beta1' | 'v1alpha1';
  /** Receives a line per subresource call, every knob it cannot read, and every failed step it retries. */
  log?: (line: string) => void;
}

/** The cluster access the simulator needs: an administrator's configuration and the PEM material for its server. @category testing */
export interface KubevirtSimulatorCluster {
  kubeConfig: KubeConfig;
  /** `caPem` signed `servingCertPem`, which names 127.0.0.1: the apiserver checks the webhook with it. */
  certificates: { caPem: string; servingCertPem: string; servingKeyPem: string; frontProxyCaPem: string };
}

/** A running KubeVirt simulator. @category testing */
export interface KubevirtSimulator {
  /** Where the aggregated `subresources.kubevirt.io` server listens, `https://127.0.0.1:<port>`. */
  subresourceUrl: string;
  /** The node VMIs report by default. */
  nodeName: string;
  /** Closes the watches and the subresource server. Leaves every object in the cluster as it is. */
  stop(): Promise<void>;
}

/** Where the simulator registers its aggregated API, as KubeVirt's operator names it. */
const serviceRef = { namespace: 'kubevirt', name: 'virt-api' } as const;
const apiServiceName = `v1.${subresourceGroup}`;

async function registerAggregatedApi(kubeConfig: KubeConfig, port: number): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const registration = kubeConfig.makeApiClient(ApiregistrationV1Api);
  await ensureNamespace(kubeConfig, serviceRef.namespace);
  const service: V1Service = {
    metadata: { name: serviceRef.name, namespace: serviceRef.namespace },
    // Endpoints cannot point into 127.0.0.0/8; an ExternalName service to localhost can.
    spec: {
      type: 'ExternalName',
      externalName: 'localhost',
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    },
  };
  await upsert(
    () => core.readNamespacedService(serviceRef),
    () => core.createNamespacedService({ namespace: serviceRef.namespace, body: service }),
    (_, resourceVersion) =>
      core.replaceNamespacedService({
        ...serviceRef,
        body: { ...service, metadata: { ...service.metadata, resourceVersion } },
      }),
  );
  const apiService: V1APIService = {
    metadata: { name: apiServiceName },
    spec: {
      group: subresourceGroup,
      version: 'v1',
      groupPriorityMinimum: 1000,
      versionPriority: 15,
      insecureSkipTLSVerify: true,
      service: { ...serviceRef, port },
    },
  };
  await upsert(
    () => registration.readAPIService({ name: apiServiceName }),
    () => registration.createAPIService({ body: apiService }),
    (_, resourceVersion) =>
      registration.replaceAPIService({
        name: apiServiceName,
        body: { ...apiService, metadata: { ...apiService.metadata, resourceVersion } },
      }),
  );
}

const webhookName = 'vm-start.sim.kubevirt.corral.dev';

// KubeVirt refuses some VM writes in its validating webhook; the simulator's does it for a start written as the
// run field of a VM with the fail-start knob. Ignore on failure: VM writes go on while no simulator runs.
async function registerVmWebhook(kubeConfig: KubeConfig, port: number, caPem: string): Promise<void> {
  const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const configuration: V1ValidatingWebhookConfiguration = {
    metadata: { name: webhookName },
    webhooks: [
      {
        name: webhookName,
        clientConfig: {
          url: `https://127.0.0.1:${port}${vmAdmissionPath}`,
          caBundle: Buffer.from(caPem).toString('base64'),
        },
        rules: [
          {
            apiGroups: ['kubevirt.io'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['virtualmachines'],
          },
        ],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 5,
      },
    ],
  };
  await upsert(
    () => admission.readValidatingWebhookConfiguration({ name: webhookName }),
    () => admission.createValidatingWebhookConfiguration({ body: configuration }),
    (_, resourceVersion) =>
      admission.replaceValidatingWebhookConfiguration({
        name: webhookName,
        body: { ...configuration, metadata: { ...configuration.metadata, resourceVersion } },
      }),
  );
}

// The apiserver picks a new webhook up a moment after it is written: until a dry-run start is refused, it may not.
async function waitUntilAdmitting(kubeConfig: KubeConfig): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const probe: VirtualMachine = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: 'webhook-probe', annotations: { [simulatorAnnotations.failStart]: '422 probe' } },
    spec: { runStrategy: 'Always', template: { spec: { domain: { devices: {} } } } },
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const refused = await custom
      .createNamespacedCustomObject({
        ...kubevirtResources.vm,
        namespace: 'default',
        body: probe,
        dryRun: 'All',
      })
      .then(
        () => false,
        (error: unknown) => {
          const text = String((error as { body?: unknown }).body ?? error);
          return text.includes(webhookName) && text.includes('denied the request: probe');
        },
      );
    if (refused) return;
    if (Date.now() > deadline) {
      throw new VdiError(
        'CONTROL_PLANE_FAILED',
        `The simulator's validating webhook ${webhookName} was not called within 30 s; check that kube-apiserver can reach 127.0.0.1.`,
      );
    }
    await pause(100);
  }
}

async function waitUntilRouted(kubeConfig: KubeConfig, proxiedRequests: () => number): Promise<void> {
  const registration = kubeConfig.makeApiClient(ApiregistrationV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const apiService = await unlessNotFound(registration.readAPIService({ name: apiServiceName }));
    const available = apiService?.status?.conditions?.some(
      (c) => c.type === 'Available' && c.status === 'True',
    );
    // Available may be left over from an earlier simulator; a request that reached this server is not.
    if (available && proxiedRequests() > 0) {
      const routed = await custom.getAPIResources({ group: subresourceGroup, version: 'v1' }).then(
        () => true,
        () => false,
      );
      if (routed) return;
    }
    if (Date.now() > deadline) {
      const conditions = JSON.stringify(apiService?.status?.conditions ?? []);
      throw new VdiError(
        'CONTROL_PLANE_FAILED',
        `The aggregated API ${apiServiceName} did not become available within 60 s (conditions ${conditions}); check that kube-apiserver runs with --requestheader-client-ca-file and --proxy-client-cert-file.`,
      );
    }
    await pause(100);
  }
}

// KubeVirt's install lets every authenticated user read its CR; the SDK's capacity check relies on it.
const kubevirtDefaultRole = 'kubevirt.io:default';

/** Grants `get` and `list` on `kubevirts` to `system:authenticated`, as KubeVirt's ClusterRole `kubevirt.io:default`. */
async function grantKubevirtReadToEveryone(kubeConfig: KubeConfig): Promise<void> {
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const role = {
    metadata: { name: kubevirtDefaultRole },
    rules: [{ apiGroups: ['kubevirt.io'], resources: ['kubevirts'], verbs: ['get', 'list'] }],
  };
  await upsert(
    () => rbac.readClusterRole({ name: kubevirtDefaultRole }),
    () => rbac.createClusterRole({ body: role }),
    (_, resourceVersion) =>
      rbac.replaceClusterRole({
        name: kubevirtDefaultRole,
        body: { ...role, metadata: { ...role.metadata, resourceVersion } },
      }),
  );
  const binding = {
    metadata: { name: kubevirtDefaultRole },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: kubevirtDefaultRole },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
  };
  await upsert(
    () => rbac.readClusterRoleBinding({ name: kubevirtDefaultRole }),
    () => rbac.createClusterRoleBinding({ body: binding }),
    (_, resourceVersion) =>
      rbac.replaceClusterRoleBinding({
        name: kubevirtDefaultRole,
        body: { ...binding, metadata: { ...binding.metadata, resourceVersion } },
      }),
  );
}

/**
 * Starts the KubeVirt simulator against a real apiserver: installs KubeVirt's CRDs, serves the VM `start`, `stop`
 * and `restart` subresources as the aggregated API `subresources.kubevirt.io/v1`, and runs watch-driven VM and
 * clone controllers. `startLocalCluster` calls it; call it yourself for a cluster you started otherwise. What is
 * simulated, and every fault knob, is described in `docs/simulator.md`.
 *
 * @example
 * ```ts
 * const simulator = await startKubevirtSimulator(cluster, { nodeName: 'gpu-node-1' });
 * try {
 *   // create VMs, start them through the subresource, watch their VMIs…
 * } finally {
 *   await simulator.stop();
 * }
 * ```
 * @throws `VdiError` `INVALID_INPUT` for an `ipRange` outside 127.0.0.0/8; `CONTROL_PLANE_FAILED` when the
 * CRDs or the aggregated API do not come up.
 * @category testing
 */
export async function startKubevirtSimulator(
  cluster: KubevirtSimulatorCluster,
  options: KubevirtSimulatorOptions = {},
): Promise<KubevirtSimulator> {
  const { kubeConfig, certificates } = cluster;
  const log = options.log ?? (() => {});
  const nodeName = options.nodeName?.trim() || 'sim-node-1';
  const addresses = await claimLoopbackRange(options.ipRange);
  const ips = new IpPool(addresses.range);
  const cloneVersion = options.cloneVersion ?? 'v1beta1';
  const cloneResource = { ...kubevirtResources.clone, version: cloneVersion };

  const server = await startSubresourceServer({ kubeConfig, ...certificates, log }).catch(
    async (error: unknown) => {
      await addresses.release();
      throw error;
    },
  );
  const informers: Array<{ stop(): void }> = [];
  const queues: KeyedWorkQueue[] = [];
  try {
    await registerAggregatedApi(kubeConfig, server.port);
    // The aggregator takes seconds to route a new APIService (it rebuilds its OpenAPI first): install meanwhile.
    await installKubevirtCrds(kubeConfig, { cloneVersion });
    await grantKubevirtReadToEveryone(kubeConfig);
    await waitUntilRouted(kubeConfig, server.proxiedRequests);
    await registerVmWebhook(kubeConfig, server.port, certificates.caPem);
    // KubeVirt's admission rules are registered and probed at clone.kubevirt.io/v1beta1
    const admitting = cloneVersion === 'v1beta1';
    if (admitting)
      await registerKubevirtWebhooks(kubeConfig, `https://127.0.0.1:${server.port}`, certificates.caPem);
    await waitUntilAdmitting(kubeConfig);
    if (admitting) await waitUntilKubevirtWebhooksAdmit(kubeConfig);

    const restoring = new Set<string>();
    // The queues collect the keys of the first lists and start once the reconcilers have their caches.
    const vmQueue = new KeyedWorkQueue(32, log);
    const cloneQueue = new KeyedWorkQueue(8, log);
    queues.push(vmQueue, cloneQueue);
    const watched: Array<{ informer: Informer<{ metadata: object }>; queue: KeyedWorkQueue }> = [];
    // A namespace's knobs changed (its clock moved, it was paused or resumed): look at its objects again.
    const scopes = await startNamespaceScopes({
      kubeConfig,
      onChange: (namespace) => {
        for (const { informer, queue } of watched)
          for (const key of informer.keys()) if (splitKey(key).namespace === namespace) queue.add(key);
      },
      log,
    });
    informers.push(scopes);

    const vmis = await startInformer<VirtualMachineInstance>({
      kubeConfig,
      resource: kubevirtResources.vmi,
      onChange: (key, vmi) => {
        // VMIs from an earlier run keep their addresses.
        const address = vmi?.status?.interfaces?.[0]?.ipAddress;
        if (address) ips.reserve(key, address);
        server.vmiChanged(key, vmi);
        vmQueue.add(key);
      },
      log,
    });
    informers.push(vmis);
    let clones: Informer<VirtualMachineClone> | undefined;
    // a finished clone goes once its VM is gone, as KubeVirt's clone controller sees to
    const wakeClonesOf = (vmKey: string) => {
      const { namespace, name } = splitKey(vmKey);
      for (const cloneKey of clones?.keys() ?? []) {
        const clone = clones?.get(cloneKey);
        if (clone?.metadata.namespace === namespace && clone.status?.targetName === name)
          cloneQueue.add(cloneKey);
      }
    };
    const vms = await startInformer<VirtualMachine>({
      kubeConfig,
      resource: kubevirtResources.vm,
      onChange: (key, vm) => {
        vmQueue.add(key);
        if (vm === undefined) wakeClonesOf(key);
      },
      log,
    });
    informers.push(vms);
    watched.push({ informer: vms, queue: vmQueue });
    clones = await startInformer<VirtualMachineClone>({
      kubeConfig,
      resource: cloneResource,
      onChange: (key) => cloneQueue.add(key),
      log,
    });
    informers.push(clones);
    watched.push({ informer: clones, queue: cloneQueue });

    const reconcileVm = createVmReconciler({
      kubeConfig,
      vms,
      vmis,
      ips,
      defaultNodeName: nodeName,
      restoring,
      log,
      requeueAfter: (key, ms) => vmQueue.addAfter(key, ms),
      scopeOf: scopes.of,
    });
    const reconcileClone = createCloneReconciler({
      kubeConfig,
      cloneResource,
      clones,
      vms,
      restoring,
      wakeVm: (key) => vmQueue.add(key),
      log,
      requeueAfter: (key, ms) => cloneQueue.addAfter(key, ms),
      scopeOf: scopes.of,
    });
    vmQueue.start(reconcileVm);
    cloneQueue.start(reconcileClone);
  } catch (error) {
    for (const informer of informers) informer.stop();
    await Promise.all(queues.map((queue) => queue.stop()));
    await unregisterKubevirtWebhooks(kubeConfig).catch(() => undefined);
    await server.close();
    await addresses.release();
    throw error;
  }

  let stopped = false;
  return {
    subresourceUrl: `https://127.0.0.1:${server.port}`,
    nodeName,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const informer of informers) informer.stop();
      await Promise.all(queues.map((queue) => queue.stop()));
      // a webhook nobody answers would slow every VM write the apiserver still takes
      await unlessNotFound(
        kubeConfig
          .makeApiClient(AdmissionregistrationV1Api)
          .deleteValidatingWebhookConfiguration({ name: webhookName }),
      ).catch(() => undefined);
      await unregisterKubevirtWebhooks(kubeConfig).catch(() => undefined);
      await server.close();
      await addresses.release();
    },
  };
}
