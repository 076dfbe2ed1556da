import type { KubeConfig } from '@kubernetes/client-node';
import type { WebSocket } from 'ws';
import type { LeaseObject, PodObject } from '../kube-objects.js';
import type {
  PermittedHostDevices,
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
} from '../kubevirt-types.js';
import { ApiDiscovery, readServedVersions } from './api-discovery.js';
import {
  type CachedObjects,
  type CacheSources,
  cacheListsAtOnce,
  createSlots,
  type NamespaceCaches,
  type StartCachesOptions,
  startNamespaceCaches,
  type WatchFrom,
  watchTimeoutSeconds,
} from './cluster-caches.js';
import { apiFailureOf } from './errors.js';
import { openPodExec, type PodExecTarget, type TerminalStream } from './pod-exec.js';
import { rawRequest } from './raw-request.js';
import type { ObjectStore } from './read-modify-write.js';
import {
  type DeletePreconditions,
  type KubeObject,
  type ListOptions,
  type MergePatch,
  ResourceClient,
  type ResourceKind,
  type ResourceTransport,
  versioned,
} from './resource.js';
import {
  cloneKind,
  configMapKind,
  kubeVirtKind,
  leaseKind,
  podKind,
  vmiKind,
  vmKind,
} from './resource-kinds.js';
import { callWithRetry, type RetryOptions } from './retry.js';
import type { ListedObjects } from './watch-cache.js';
import { type OpenWatch, openWatchStream } from './watch-stream.js';
import { openKubeWebSocket } from './websocket.js';

export type { DeletePreconditions, ListOptions, SharedReads } from './resource.js';

/**
 * Hears what the adapter sends, for metrics: each request try with its verb and answer, and each Lease write
 * the apiserver refused with 409.
 *
 * @category adapters
 */
export interface KubeRequestObserver {
  /** One request try: `code` is `2xx`, the apiserver's failure status (`404`, `409`, `503`), or `error` without an answer. */
  request?(verb: string, code: string): void;
  /** A Lease create lost the race (`AlreadyExists`) or a Lease replace named a stale resourceVersion. */
  leaseConflict?(verb: 'create' | 'update'): void;
}

/** The outcome of a start or stop request that KubeVirt accepted or found already done. */
export type PowerChange = 'changed' | 'already';

// a watch silent this long past its timeout lost its connection without a reset
const watchSilentMs = (watchTimeoutSeconds + 30) * 1000;

// what each of a namespace's caches lists and watches
const cachedKinds = { leases: leaseKind, vms: vmKind, vmis: vmiKind, configMaps: configMapKind };

/**
 * The thin Kubernetes adapter: every apiserver call the SDK makes goes through here, retried when transient,
 * translated to `VdiError`, and counted. It decides nothing. Services reach it as `vdi.context.cluster`, and any
 * kind through {@link KubeCluster.resource}; the Lease, VM and VMI methods by name are the claim path's, which
 * subclasses hook.
 *
 * @category adapters
 */
export class KubeCluster implements CacheSources {
  readonly kubeConfig: KubeConfig;
  /** Apiserver requests made, by verb (`get`, `list`, `create`, `update`, `patch`, `delete`, `start`, …). */
  readonly requestCounts = new Map<string, number>();
  /** Requests sent again after a transient failure (a dropped connection, a 5xx, a 429). */
  retriesMade = 0;
  /** Bytes of response bodies read so far, as the client received them. */
  responseBytes = 0;
  private readonly retry: RetryOptions;
  private readonly caches = new Map<string, NamespaceCaches>();
  // the caches' lists of all namespaces, a few at a time: each holds its page's objects while it reads
  private readonly cacheLists = createSlots(cacheListsAtOnce);
  private readonly observers = new Set<KubeRequestObserver>();
  private readonly discovery: ApiDiscovery;
  private readonly transport: ResourceTransport;

  constructor(kubeConfig: KubeConfig, retry: RetryOptions = {}) {
    this.kubeConfig = kubeConfig;
    this.retry = retry;
    const countBytes = (bytes: number) => {
      this.responseBytes += bytes;
    };
    this.discovery = new ApiDiscovery((group) =>
      this.call('discover', `discover the versions of ${group}`, () =>
        readServedVersions(kubeConfig, group, countBytes),
      ),
    );
    this.transport = {
      send: (verb, doing, { method, path, body }) =>
        this.call(verb, doing, async () => {
          const text = await rawRequest(kubeConfig, method, path, body, countBytes);
          return text === '' ? {} : JSON.parse(text);
        }),
      watch: (doing, pathAndQuery, from, convert) =>
        this.call('watch', doing, () =>
          openWatchStream(
            kubeConfig,
            pathAndQuery,
            {
              onEvent: (event) =>
                from.onEvent(
                  event.type === 'ERROR' || event.type === 'BOOKMARK'
                    ? event
                    : { type: event.type, object: convert(event.object) },
                ),
              onBytes: countBytes,
            },
            { signal: from.signal, silentMs: watchSilentMs },
          ),
        ),
      cachesOf: (namespace) => this.caches.get(namespace),
      versionOf: (kind) => this.discovery.versionOf(kind),
      conflict: (verb) => {
        for (const observer of this.observers) observer.leaseConflict?.(verb);
      },
    };
  }

  /**
   * The typed accessor of a kind, over every namespace; bind one with `.in(namespace)`.
   *
   * @example
   * const pod = await vdi.context.cluster.resource(podKind).in('corral-ct').get('devpool-1');
   */
  resource<K extends KubeObject, S extends string = never>(kind: ResourceKind<K, S>): ResourceClient<K, S> {
    return new ResourceClient(this.transport, kind);
  }

  /** Total apiserver requests made so far. */
  get requestTotal(): number {
    let total = 0;
    for (const count of this.requestCounts.values()) total += count;
    return total;
  }

  /** Adds an observer of every request from now on; the returned function removes it. */
  observe(observer: KubeRequestObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  private count(verb: string): void {
    this.requestCounts.set(verb, (this.requestCounts.get(verb) ?? 0) + 1);
  }

  private call<T>(verb: string, doing: string, run: () => Promise<T>): Promise<T> {
    const tell = (code: string) => {
      for (const observer of this.observers) observer.request?.(verb, code);
    };
    return callWithRetry(
      doing,
      async () => {
        this.count(verb);
        try {
          const result = await run();
          tell('2xx');
          return result;
        } catch (error) {
          tell(String(apiFailureOf(error)?.status ?? 'error'));
          throw error;
        }
      },
      {
        ...this.retry,
        onRetry: () => {
          this.retriesMade += 1;
        },
      },
    );
  }

  // Watch caches

  /**
   * Starts watch-backed caches of the claim Leases, the pool members' VMs, the VMIs and the pools' ConfigMaps of each
   * namespace (one already cached is left as it is): each lists once, then watches with bookmarks, goes on from the
   * last resourceVersion when a watch ends, lists again after 410 Gone or once its list is older than the resync
   * bound, and backs off after failures. Lists with `cached` are answered from them once synced, and this adapter's
   * own writes reach them at once. Needs `list` and `watch` on those resources.
   */
  startCaches(namespaces: readonly string[], options: StartCachesOptions): void {
    for (const namespace of namespaces) {
      if (!this.caches.has(namespace))
        this.caches.set(namespace, startNamespaceCaches(this, namespace, options, this.cacheLists));
    }
  }

  /**
   * Resolves once every started cache holds its first list and watches on from it; at once when none was
   * started.
   *
   * @throws `VdiError` `FORBIDDEN` (or another lasting refusal) when a cache was refused before it synced; it
   *   keeps trying, so a later call may resolve.
   */
  async waitForCacheSync(): Promise<void> {
    await Promise.all(
      [...this.caches.values()].flatMap((caches) => Object.values(caches).map((cache) => cache.synced())),
    );
  }

  /** Whether a cache of `namespace` was started (synced or not). */
  isCaching(namespace: string): boolean {
    return this.caches.has(namespace);
  }

  /** The caches of a namespace, when started. */
  cachesOf(namespace: string): NamespaceCaches | undefined {
    return this.caches.get(namespace);
  }

  /** Stops every cache's watch; lists go to the apiserver again. */
  stopCaches(): void {
    for (const caches of this.caches.values()) for (const cache of Object.values(caches)) cache.stop();
    this.caches.clear();
  }

  listToCache<C extends keyof CachedObjects>(
    cache: C,
    namespace: string,
    labelSelector: string | undefined,
    keep?: (object: CachedObjects[C]) => CachedObjects[C],
  ): Promise<ListedObjects<CachedObjects[C]>> {
    const kind = cachedKinds[cache] as unknown as ResourceKind<CachedObjects[C]>;
    return this.resource(kind).in(namespace).listToWatch(labelSelector, keep);
  }

  watchToCache(
    cache: keyof CachedObjects,
    namespace: string,
    labelSelector: string | undefined,
    from: WatchFrom,
  ): Promise<OpenWatch> {
    const kind = cachedKinds[cache] as ResourceKind<CachedObjects[typeof cache]>;
    return this.resource(kind).in(namespace).watch(labelSelector, from);
  }

  // Leases: the claim primitive

  /** Reads a Lease; `undefined` when there is none. */
  getLease(namespace: string, name: string): Promise<LeaseObject | undefined> {
    return this.resource(leaseKind).in(namespace).get(name);
  }

  /**
   * Lists the Leases of a namespace, optionally by label selector; with `cached` or `notOlderThan` from this
   * process's synced cache when it can answer.
   */
  listLeases(namespace: string, labelSelector?: string, options: ListOptions = {}): Promise<LeaseObject[]> {
    return this.resource(leaseKind).in(namespace).list(labelSelector, options);
  }

  /** Creates a Lease. First writer wins: a loser gets `CONFLICT` with reason `AlreadyExists`. */
  createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    return this.resource(leaseKind).in(namespace).create(lease);
  }

  /**
   * Replaces a Lease; its `metadata.resourceVersion` must be the one read, or `CONFLICT` with reason `Conflict`.
   *
   * @throws `VdiError` `INVALID_INPUT` when it carries none.
   */
  async replaceLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const client = this.resource(leaseKind).in(namespace);
    return await client.replace(versioned(lease, `replace ${client.named(lease.metadata.name ?? '')}`));
  }

  /** Deletes a Lease only if it is still the one read (uid and resourceVersion). Gone already → `false`. */
  deleteLease(namespace: string, name: string, preconditions: DeletePreconditions): Promise<boolean> {
    return this.resource(leaseKind).in(namespace).delete(name, { preconditions });
  }

  /** A namespace's Leases through the methods above, for a read-modify-write that subclasses can hook. */
  leasesIn(namespace: string): ObjectStore<LeaseObject> {
    return {
      get: (name) => this.getLease(namespace, name),
      create: (lease) => this.createLease(namespace, lease),
      replace: (lease) => this.replaceLease(namespace, lease),
    };
  }

  // VirtualMachines and their instances

  /** Reads a VM; `undefined` when there is none. */
  getVm(namespace: string, name: string): Promise<VirtualMachine | undefined> {
    return this.resource(vmKind).in(namespace).get(name);
  }

  /**
   * A VM and its VMI as this process's watch caches hold them, each only when its cache is synced and has seen
   * resourceVersion `since` or later (it shows every change to it made before then); `undefined` for one whose cache
   * cannot tell yet, with no request: read that one fresh. `object` is `undefined` when the cache holds none of
   * that name.
   */
  getVmAndVmiSeenSince(
    namespace: string,
    name: string,
    since: string,
  ): {
    vm: { object: VirtualMachine | undefined } | undefined;
    vmi: { object: VirtualMachineInstance | undefined } | undefined;
  } {
    const caches = this.caches.get(namespace);
    return { vm: caches?.vms.getSeenSince(name, since), vmi: caches?.vmis.getSeenSince(name, since) };
  }

  /** Lists the VMs of a namespace, or of every namespace, optionally by label selector. */
  listVms(
    namespace: string | undefined,
    labelSelector?: string,
    options: ListOptions = {},
  ): Promise<VirtualMachine[]> {
    const client = this.resource(vmKind);
    return (namespace ? client.in(namespace) : client).list(labelSelector, options);
  }

  /** Creates a VM. */
  createVm(namespace: string, vm: VirtualMachine): Promise<VirtualMachine> {
    return this.resource(vmKind).in(namespace).create(vm);
  }

  /**
   * Merge-patches a VM. Put `metadata.resourceVersion` in the patch to make it conditional (stale → `CONFLICT`);
   * a `null` value removes a key.
   */
  patchVm(namespace: string, name: string, patch: MergePatch): Promise<VirtualMachine> {
    return this.resource(vmKind).in(namespace).patch(name, patch);
  }

  /** Deletes a VM, optionally only if unchanged. Gone already → `false`. */
  deleteVm(namespace: string, name: string, preconditions: DeletePreconditions = {}): Promise<boolean> {
    return this.resource(vmKind).in(namespace).delete(name, { preconditions });
  }

  /**
   * Asks KubeVirt to stop a VM (its disks stay); "not running" is `'already'`. (A start writes the VM's run field,
   * conditional on the VM as read, so it goes through {@link KubeCluster.patchVm}.)
   */
  async stopVm(namespace: string, name: string): Promise<PowerChange> {
    const path = await this.resource(vmKind).in(namespace).subresourcePath(name, 'stop');
    try {
      await this.call('stop', `stop VirtualMachine ${namespace}/${name}`, () =>
        rawRequest(this.kubeConfig, 'PUT', path, {}, (bytes) => {
          this.responseBytes += bytes;
        }),
      );
      return 'changed';
    } catch (error) {
      const failure = apiFailureOf((error as { cause?: unknown }).cause);
      // a Halted VM whose instance is still going down is already being stopped
      const already = /not running|already stopped|Halted only supports manual stop/i;
      if (failure?.status !== 409 || !already.test(failure.message)) throw error;
      return 'already';
    }
  }

  /** Reads a VM's instance; `undefined` while the VM does not run. */
  getVmi(namespace: string, name: string): Promise<VirtualMachineInstance | undefined> {
    return this.resource(vmiKind).in(namespace).get(name);
  }

  /** VMIs of one namespace, or of every namespace when `namespace` is undefined. */
  listVmis(namespace?: string, options: ListOptions = {}): Promise<VirtualMachineInstance[]> {
    const client = this.resource(vmiKind);
    return (namespace ? client.in(namespace) : client).list(undefined, options);
  }

  /**
   * Opens a VMI's `vnc` or `console` subresource as a websocket (subprotocol `plain.kubevirt.io`: raw bytes in
   * binary messages). Counted as a `get`, the RBAC verb of `virtualmachineinstances/vnc` and `/console`.
   */
  async openVmiConsole(
    namespace: string,
    name: string,
    subresource: 'vnc' | 'console',
    maxPayload: number,
  ): Promise<WebSocket> {
    const path = await this.resource(vmiKind).in(namespace).subresourcePath(name, subresource);
    const doing = `open the ${subresource} console of VirtualMachineInstance ${namespace}/${name}`;
    this.count('get');
    // no retry: a console that did not open is answered to its user, who opens it again
    return await openKubeWebSocket(this.kubeConfig, path, {
      protocol: 'plain.kubevirt.io',
      maxPayload,
      doing,
    });
  }

  // VirtualMachineClones

  /**
   * The `clone.kubevirt.io` version clones are written and read in: the newest the cluster serves of `v1beta1`
   * (KubeVirt v1.5.0 and later) and `v1alpha1`, found by API discovery once and then kept. A failed discovery is
   * not kept, so the next call asks again.
   *
   * @throws `VdiError` `UNSUPPORTED_BACKEND` when the cluster serves neither version: KubeVirt's clone API is
   *   missing.
   */
  cloneApiVersion(): Promise<string> {
    return this.discovery.versionOf(cloneKind);
  }

  /**
   * Creates a VirtualMachineClone in the newest `clone.kubevirt.io` version the cluster serves
   * ({@link KubeCluster.cloneApiVersion}).
   *
   * @throws `VdiError` `UNSUPPORTED_BACKEND` when the cluster has no clone API.
   */
  createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    return this.resource(cloneKind).in(namespace).create(clone);
  }

  /** Reads a VirtualMachineClone; `undefined` when there is none (or no clone API). */
  getClone(namespace: string, name: string): Promise<VirtualMachineClone | undefined> {
    return this.resource(cloneKind).in(namespace).get(name);
  }

  // Pods and the KubeVirt configuration

  /** Creates a Pod. An existing one is `CONFLICT` with reason `AlreadyExists`. */
  createPod(namespace: string, pod: PodObject): Promise<PodObject> {
    return this.resource(podKind).in(namespace).create(pod);
  }

  /** Runs a command with a TTY in a Pod's container through `pods/exec`; the stream is a {@link TerminalStream}. */
  async execInPod(target: PodExecTarget): Promise<TerminalStream> {
    return await this.call('create', `exec in Pod ${target.namespace}/${target.pod}`, () =>
      openPodExec(this.kubeConfig, target),
    );
  }

  /**
   * Opens `command` in a Pod's container with stdin and a TTY as the apiserver's exec websocket itself
   * (subprotocol `v4.channel.k8s.io`: each message starts with its channel byte), paused until `resume()`.
   */
  async openPodExecSocket(
    target: Omit<PodExecTarget, 'columns' | 'rows'>,
    maxPayload: number,
  ): Promise<WebSocket> {
    const query = new URLSearchParams({
      container: target.container,
      stdin: 'true',
      stdout: 'true',
      tty: 'true',
    });
    for (const part of target.command) query.append('command', part);
    const path = await this.resource(podKind).in(target.namespace).subresourcePath(target.pod, 'exec');
    this.count('create');
    // no retry: a terminal that did not open is answered to its user, who opens it again
    return await openKubeWebSocket(this.kubeConfig, `${path}?${query}`, {
      protocol: 'v4.channel.k8s.io',
      maxPayload,
      doing: `exec in Pod ${target.namespace}/${target.pod}`,
    });
  }

  /** The `permittedHostDevices` of the cluster's KubeVirt CR; empty when there is no CR or no such setting. */
  async getPermittedHostDevices(): Promise<PermittedHostDevices> {
    const [first] = await this.resource(kubeVirtKind).list();
    return first?.spec?.configuration?.permittedHostDevices ?? {};
  }
}
