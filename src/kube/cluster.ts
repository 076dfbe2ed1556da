import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
} from '@kubernetes/client-node';
import type { WebSocket } from 'ws';
import { isVdiError, VdiError } from '../errors.js';
import { formatMicroTime } from '../format-time.js';
import type {
  ConfigMapObject,
  LeaseObject,
  NodeObject,
  PersistentVolumeClaimObject,
  PodObject,
  ServiceObject,
} from '../kube-objects.js';
import type {
  PermittedHostDevices,
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineInstance,
} from '../kubevirt-types.js';
import {
  type CacheSources,
  type NamespaceCaches,
  type StartCachesOptions,
  startNamespaceCaches,
  type WatchFrom,
  watchTimeoutSeconds,
} from './cluster-caches.js';
import { makeKeepAliveClient } from './connections.js';
import { apiFailureOf } from './errors.js';
import { openPodExec, type PodExecTarget, type TerminalStream } from './pod-exec.js';
import { rawRequest } from './raw-request.js';
import { callWithRetry, type RetryOptions } from './retry.js';
import type { ListedObjects } from './watch-cache.js';
import { type OpenWatch, openWatchStream } from './watch-stream.js';
import { openKubeWebSocket } from './websocket.js';

/** Preconditions of a delete: it is refused (409) when the object changed since it was read. */
export interface DeletePreconditions {
  uid?: string;
  resourceVersion?: string;
}

/**
 * How a list is read: `cached` serves it from this process's watch cache of the namespace once one is started and
 * synced ({@link KubeCluster.startCaches}), else from the apiserver's watch cache (`resourceVersion=0`); either
 * may lag other processes' latest writes by a moment but spares etcd a quorum read. Otherwise it is a quorum read
 * of the latest state.
 */
export interface ListOptions {
  cached?: boolean;
  /**
   * A resourceVersion the answer must not be older than: it then shows every change made before that version.
   * Answered from this process's synced watch cache when it has seen that version, else by the apiserver from its
   * own watch cache once that has caught up, without a quorum read of etcd (the process's caches answer it only
   * in `listLeases`).
   */
  notOlderThan?: string;
  /**
   * With `notOlderThan`: how long to wait for this process's synced cache to see that version (its own write's event
   * is on the way) before asking the apiserver; only in `listLeases`. @defaultValue 0
   */
  cacheWaitMs?: number;
}

// resourceVersion 0 lets the apiserver answer from its watch cache instead of a quorum read of etcd; any other
// value asks for an answer not older than it, which the apiserver serves from its watch cache too
function listVersion(options: ListOptions): { resourceVersion?: string } {
  if (options.notOlderThan !== undefined) return { resourceVersion: options.notOlderThan };
  return options.cached ? { resourceVersion: '0' } : {};
}

/** One page of a list: its items, and where the next page starts when there is one. */
interface ListPage<T> {
  items: T[];
  // typed clients (Leases) name the token `_continue`, custom objects come as plain JSON with `continue`
  metadata?: { resourceVersion?: string; continue?: string; _continue?: string };
}

/** Where one page of a list starts: `limit` objects from `_continue` (the first page without it). */
interface PageRequest {
  limit: number;
  _continue?: string;
}

// as client-go's pager: a watch cache's first list of a big namespace comes in pages of this many, never as one
// answer the apiserver must build and the process must hold whole
const listPageSize = 500;

/**
 * Reads a list page by page with `readPage` ({@link listPageSize} objects each, through `continue`), each page a
 * request of its own, and returns every item with the list's resourceVersion: the pages of one list are one snapshot.
 */
async function readAllPages<T>(readPage: (page: PageRequest) => Promise<unknown>): Promise<ListedObjects<T>> {
  const items: T[] = [];
  let resourceVersion = '';
  let next: string | undefined;
  do {
    const page = (await readPage({
      limit: listPageSize,
      ...(next === undefined ? {} : { _continue: next }),
    })) as ListPage<T>;
    for (const item of page.items) items.push(item);
    resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    next = page.metadata?.continue || page.metadata?._continue || undefined;
  } while (next !== undefined);
  return { items, resourceVersion };
}

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

const kubevirt = { group: 'kubevirt.io', version: 'v1' } as const;
const cloneGroup = 'clone.kubevirt.io';
// the clone versions the SDK writes, newest first; both carry the spec it writes
const cloneVersions = ['v1beta1', 'v1alpha1'] as const;
const leaseApi = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function collectionPath(api: { group: string; version: string; plural: string }, namespace: string): string {
  return `/apis/${api.group}/${api.version}/namespaces/${encodeURIComponent(namespace)}/${api.plural}`;
}

function watchQuery(labelSelector: string | undefined, from: WatchFrom): string {
  const query = new URLSearchParams({
    watch: 'true',
    allowWatchBookmarks: 'true',
    timeoutSeconds: String(watchTimeoutSeconds),
    resourceVersion: from.resourceVersion,
  });
  if (labelSelector) query.set('labelSelector', labelSelector);
  return `?${query}`;
}

// a watch silent this long past its timeout lost its connection without a reset
const watchSilentMs = (watchTimeoutSeconds + 30) * 1000;

function leaseFromApi(lease: V1Lease): LeaseObject {
  const time = (value: unknown) =>
    value instanceof Date ? value.toISOString() : typeof value === 'string' ? value : undefined;
  const spec = lease.spec ?? {};
  const acquireTime = time(spec.acquireTime);
  const renewTime = time(spec.renewTime);
  return {
    metadata: lease.metadata as LeaseObject['metadata'],
    spec: {
      ...(spec.holderIdentity === undefined ? {} : { holderIdentity: spec.holderIdentity }),
      ...(spec.leaseDurationSeconds === undefined ? {} : { leaseDurationSeconds: spec.leaseDurationSeconds }),
      ...(acquireTime === undefined ? {} : { acquireTime }),
      ...(renewTime === undefined ? {} : { renewTime }),
      ...(spec.leaseTransitions === undefined ? {} : { leaseTransitions: spec.leaseTransitions }),
    },
  };
}

// Lease times are MicroTime: the apiserver rejects them without the microsecond digits.
function microTime(value: string | undefined): string | undefined {
  return value === undefined ? undefined : formatMicroTime(value);
}

function leaseToApi(lease: LeaseObject): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: lease.metadata,
    spec: {
      ...lease.spec,
      acquireTime: microTime(lease.spec.acquireTime) as unknown as Date,
      renewTime: microTime(lease.spec.renewTime) as unknown as Date,
    },
  } as V1Lease;
}

/**
 * The thin Kubernetes adapter: every apiserver call the SDK makes goes through here, retried when transient,
 * translated to `VdiError`, and counted. It decides nothing. Services reach it as `vdi.context.cluster`.
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
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly retry: RetryOptions;
  private readonly caches = new Map<string, NamespaceCaches>();
  private readonly observers = new Set<KubeRequestObserver>();
  private cloneVersion: Promise<string> | undefined;

  constructor(kubeConfig: KubeConfig, retry: RetryOptions = {}) {
    this.kubeConfig = kubeConfig;
    const countBytes = (bytes: number) => {
      this.responseBytes += bytes;
    };
    this.core = makeKeepAliveClient(kubeConfig, CoreV1Api, countBytes);
    this.coordination = makeKeepAliveClient(kubeConfig, CoordinationV1Api, countBytes);
    this.custom = makeKeepAliveClient(kubeConfig, CustomObjectsApi, countBytes);
    this.retry = retry;
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

  private tell(verb: string, code: string): void {
    for (const observer of this.observers) observer.request?.(verb, code);
  }

  private call<T>(verb: string, doing: string, run: () => Promise<T>): Promise<T> {
    return callWithRetry(
      doing,
      async () => {
        this.requestCounts.set(verb, (this.requestCounts.get(verb) ?? 0) + 1);
        try {
          const result = await run();
          this.tell(verb, '2xx');
          return result;
        } catch (error) {
          this.tell(verb, String(apiFailureOf(error)?.status ?? 'error'));
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

  private openWatch(
    pathAndQuery: string,
    from: WatchFrom,
    convert: (object: unknown) => unknown = (object) => object,
  ): Promise<OpenWatch> {
    return openWatchStream(
      this.kubeConfig,
      pathAndQuery,
      {
        onEvent: (event) =>
          from.onEvent(
            event.type === 'ERROR' || event.type === 'BOOKMARK'
              ? event
              : { type: event.type, object: convert(event.object) },
          ),
        onBytes: (bytes) => {
          this.responseBytes += bytes;
        },
      },
      { signal: from.signal, silentMs: watchSilentMs },
    );
  }

  // Watch caches

  /**
   * Starts watch-backed caches of the claim Leases, the pool members' VMs and the VMIs of each namespace (one
   * already cached is left as it is): each lists once, then watches with bookmarks, goes on from the last
   * resourceVersion when a watch ends, lists again after 410 Gone or once its list is older than the resync bound,
   * and backs off after failures. Lists with `cached` are answered from them once synced, and this adapter's own
   * writes reach them at once. Needs `list` and `watch` on those resources.
   */
  startCaches(namespaces: readonly string[], options: StartCachesOptions): void {
    for (const namespace of namespaces) {
      if (!this.caches.has(namespace))
        this.caches.set(namespace, startNamespaceCaches(this, namespace, options));
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

  private async getOrUndefined<T>(
    verb: string,
    doing: string,
    run: () => Promise<T>,
  ): Promise<T | undefined> {
    try {
      return await this.call(verb, doing, run);
    } catch (error) {
      // not an unserved API group: that 404 is translated to CLUSTER_UNAVAILABLE
      if (isVdiError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
  }

  // Leases

  /** Reads a Lease; `undefined` when there is none. */
  async getLease(namespace: string, name: string): Promise<LeaseObject | undefined> {
    const lease = await this.getOrUndefined('get', `read Lease ${namespace}/${name}`, () =>
      this.coordination.readNamespacedLease({ namespace, name }),
    );
    return lease && leaseFromApi(lease);
  }

  /** Lists the Leases of a namespace, optionally by label selector. */
  async listLeases(
    namespace: string,
    labelSelector?: string,
    options: ListOptions = {},
  ): Promise<LeaseObject[]> {
    const leases = this.caches.get(namespace)?.leases;
    if (options.notOlderThan !== undefined && options.cacheWaitMs)
      await leases?.seen(options.notOlderThan, options.cacheWaitMs);
    const cached =
      options.notOlderThan !== undefined
        ? leases?.listSeenSince(labelSelector, options.notOlderThan)
        : options.cached
          ? leases?.list(labelSelector)
          : undefined;
    if (cached) return cached;
    const list = await this.call('list', `list Leases in ${namespace}`, () =>
      this.coordination.listNamespacedLease({
        namespace,
        ...(labelSelector ? { labelSelector } : {}),
        ...listVersion(options),
      }),
    );
    return list.items.map(leaseFromApi);
  }

  // A 409 on a Lease write is a lost race or a stale read: worth counting apart from other failures.
  private async countConflicts(
    verb: 'create' | 'update',
    write: () => Promise<V1Lease>,
  ): Promise<LeaseObject> {
    try {
      return leaseFromApi(await write());
    } catch (error) {
      if (isVdiError(error, 'CONFLICT')) {
        for (const observer of this.observers) observer.leaseConflict?.(verb);
      }
      throw error;
    }
  }

  /** Creates a Lease. First writer wins: a loser gets `CONFLICT` with reason `AlreadyExists`. */
  async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    const created = await this.countConflicts('create', () =>
      this.call('create', `create Lease ${namespace}/${name}`, () =>
        this.coordination.createNamespacedLease({ namespace, body: leaseToApi(lease) }),
      ),
    );
    this.caches.get(namespace)?.leases.offer(created);
    return created;
  }

  /** Replaces a Lease; its `metadata.resourceVersion` must be the one read, or `CONFLICT` with reason `Conflict`. */
  async replaceLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    const replaced = await this.countConflicts('update', () =>
      this.call('update', `replace Lease ${namespace}/${name}`, () =>
        this.coordination.replaceNamespacedLease({ namespace, name, body: leaseToApi(lease) }),
      ),
    );
    this.caches.get(namespace)?.leases.offer(replaced);
    return replaced;
  }

  /** Deletes a Lease only if it is still the one read (uid and resourceVersion). Gone already → `false`. */
  async deleteLease(namespace: string, name: string, preconditions: DeletePreconditions): Promise<boolean> {
    const deleted = await this.getOrUndefined('delete', `delete Lease ${namespace}/${name}`, () =>
      this.coordination.deleteNamespacedLease({ namespace, name, body: { preconditions } }),
    );
    // Leases have no finalizers: a delete that went through removed it
    this.caches.get(namespace)?.leases.forget(name, preconditions.uid);
    return deleted !== undefined;
  }

  /** Lists a namespace's Leases with the list's resourceVersion, where a watch of them starts. */
  async listLeasesToWatch(namespace: string): Promise<ListedObjects<LeaseObject>> {
    const listed = await readAllPages<V1Lease>((page) =>
      this.call('list', `list Leases in ${namespace}`, () =>
        this.coordination.listNamespacedLease({ namespace, ...page }),
      ),
    );
    return { items: listed.items.map(leaseFromApi), resourceVersion: listed.resourceVersion };
  }

  /** Watches a namespace's Leases; resolves once the watch is open, with its end. */
  watchLeases(namespace: string, from: WatchFrom): Promise<OpenWatch> {
    const doing = `watch Leases in ${namespace}`;
    return this.call('watch', doing, () =>
      this.openWatch(
        `${collectionPath({ ...leaseApi }, namespace)}${watchQuery(undefined, from)}`,
        from,
        (object) => leaseFromApi(object as V1Lease),
      ),
    );
  }

  // VirtualMachines

  /** Reads a VM; `undefined` when there is none. */
  async getVm(namespace: string, name: string): Promise<VirtualMachine | undefined> {
    return await this.getOrUndefined('get', `read VirtualMachine ${namespace}/${name}`, () =>
      this.custom.getNamespacedCustomObject({ ...kubevirt, plural: 'virtualmachines', namespace, name }),
    );
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
  async listVms(
    namespace: string | undefined,
    labelSelector?: string,
    options: ListOptions = {},
  ): Promise<VirtualMachine[]> {
    const cached =
      options.cached && namespace ? this.caches.get(namespace)?.vms.list(labelSelector) : undefined;
    if (cached) return cached;
    const selector = { ...(labelSelector ? { labelSelector } : {}), ...listVersion(options) };
    const list = await this.call('list', `list VirtualMachines in ${namespace ?? 'all namespaces'}`, () =>
      namespace
        ? this.custom.listNamespacedCustomObject({
            ...kubevirt,
            plural: 'virtualmachines',
            namespace,
            ...selector,
          })
        : this.custom.listClusterCustomObject({ ...kubevirt, plural: 'virtualmachines', ...selector }),
    );
    return (list as { items: VirtualMachine[] }).items;
  }

  /**
   * One page of a namespace's VMs by label selector: up to `limit` from `continue` (the first page without it), and
   * where the next page starts when there is one. A consistent read, which a current apiserver serves from its
   * watch cache with the limit kept (a list at resourceVersion 0 would ignore the limit and answer every match).
   */
  async listVmsPage(
    namespace: string,
    labelSelector: string,
    page: { limit: number; continue?: string },
  ): Promise<{ items: VirtualMachine[]; continue?: string }> {
    const list = (await this.call('list', `list VirtualMachines in ${namespace}`, () =>
      this.custom.listNamespacedCustomObject({
        ...kubevirt,
        plural: 'virtualmachines',
        namespace,
        labelSelector,
        limit: page.limit,
        ...(page.continue === undefined ? {} : { _continue: page.continue }),
      }),
    )) as ListPage<VirtualMachine>;
    const next = list.metadata?.continue || undefined;
    return { items: list.items, ...(next === undefined ? {} : { continue: next }) };
  }

  /** Creates a VM. */
  async createVm(namespace: string, vm: VirtualMachine): Promise<VirtualMachine> {
    const created: VirtualMachine = await this.call(
      'create',
      `create VirtualMachine ${namespace}/${vm.metadata.name}`,
      () =>
        this.custom.createNamespacedCustomObject({
          ...kubevirt,
          plural: 'virtualmachines',
          namespace,
          body: { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', ...vm },
        }),
    );
    this.caches.get(namespace)?.vms.offer(created);
    return created;
  }

  /**
   * Merge-patches a VM. Put `metadata.resourceVersion` in the patch to make it conditional (stale → `CONFLICT`);
   * a `null` value removes a key.
   */
  async patchVm(namespace: string, name: string, patch: Record<string, unknown>): Promise<VirtualMachine> {
    const patched: VirtualMachine = await this.call(
      'patch',
      `patch VirtualMachine ${namespace}/${name}`,
      () =>
        this.custom.patchNamespacedCustomObject(
          { ...kubevirt, plural: 'virtualmachines', namespace, name, body: patch },
          mergePatch,
        ),
    );
    this.caches.get(namespace)?.vms.offer(patched);
    return patched;
  }

  /** Lists a namespace's VMs by label selector with the list's resourceVersion, where a watch of them starts. */
  async listVmsToWatch(namespace: string, labelSelector: string): Promise<ListedObjects<VirtualMachine>> {
    return await readAllPages((page) =>
      this.call('list', `list VirtualMachines in ${namespace}`, () =>
        this.custom.listNamespacedCustomObject({
          ...kubevirt,
          plural: 'virtualmachines',
          namespace,
          labelSelector,
          ...page,
        }),
      ),
    );
  }

  /** Watches a namespace's VMs by label selector; resolves once the watch is open, with its end. */
  watchVms(namespace: string, labelSelector: string, from: WatchFrom): Promise<OpenWatch> {
    const doing = `watch VirtualMachines in ${namespace}`;
    return this.call('watch', doing, () =>
      this.openWatch(
        `${collectionPath({ ...kubevirt, plural: 'virtualmachines' }, namespace)}${watchQuery(labelSelector, from)}`,
        from,
      ),
    );
  }

  /** Deletes a VM, optionally only if unchanged. Gone already → `false`. */
  async deleteVm(namespace: string, name: string, preconditions?: DeletePreconditions): Promise<boolean> {
    const deleted = await this.getOrUndefined('delete', `delete VirtualMachine ${namespace}/${name}`, () =>
      this.custom.deleteNamespacedCustomObject({
        ...kubevirt,
        plural: 'virtualmachines',
        namespace,
        name,
        ...(preconditions ? { body: { preconditions } } : {}),
      }),
    );
    return deleted !== undefined;
  }

  /**
   * Asks KubeVirt to stop a VM (its disks stay); "not running" is `'already'`. (A start writes the VM's run field,
   * conditional on the VM as read, so it goes through {@link KubeCluster.patchVm}.)
   */
  async stopVm(namespace: string, name: string): Promise<PowerChange> {
    const path = `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(namespace)}/virtualmachines/${encodeURIComponent(name)}/stop`;
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

  // VirtualMachineInstances

  /** Reads a VM's instance; `undefined` while the VM does not run. */
  async getVmi(namespace: string, name: string): Promise<VirtualMachineInstance | undefined> {
    return await this.getOrUndefined('get', `read VirtualMachineInstance ${namespace}/${name}`, () =>
      this.custom.getNamespacedCustomObject({
        ...kubevirt,
        plural: 'virtualmachineinstances',
        namespace,
        name,
      }),
    );
  }

  /** VMIs of one namespace, or of every namespace when `namespace` is undefined. */
  async listVmis(namespace?: string, options: ListOptions = {}): Promise<VirtualMachineInstance[]> {
    const cached = options.cached && namespace ? this.caches.get(namespace)?.vmis.list() : undefined;
    if (cached) return cached;
    const list = await this.call(
      'list',
      `list VirtualMachineInstances in ${namespace ?? 'all namespaces'}`,
      () =>
        namespace
          ? this.custom.listNamespacedCustomObject({
              ...kubevirt,
              plural: 'virtualmachineinstances',
              namespace,
              ...listVersion(options),
            })
          : this.custom.listClusterCustomObject({
              ...kubevirt,
              plural: 'virtualmachineinstances',
              ...listVersion(options),
            }),
    );
    return (list as { items: VirtualMachineInstance[] }).items;
  }

  /** Lists a namespace's VMIs with the list's resourceVersion, where a watch of them starts. */
  async listVmisToWatch(namespace: string): Promise<ListedObjects<VirtualMachineInstance>> {
    return await readAllPages((page) =>
      this.call('list', `list VirtualMachineInstances in ${namespace}`, () =>
        this.custom.listNamespacedCustomObject({
          ...kubevirt,
          plural: 'virtualmachineinstances',
          namespace,
          ...page,
        }),
      ),
    );
  }

  /** Watches a namespace's VMIs; resolves once the watch is open, with its end. */
  watchVmis(namespace: string, from: WatchFrom): Promise<OpenWatch> {
    const doing = `watch VirtualMachineInstances in ${namespace}`;
    return this.call('watch', doing, () =>
      this.openWatch(
        `${collectionPath({ ...kubevirt, plural: 'virtualmachineinstances' }, namespace)}${watchQuery(undefined, from)}`,
        from,
      ),
    );
  }

  /**
   * Opens a VMI's `vnc` or `console` subresource as a websocket (subprotocol `plain.kubevirt.io`: raw bytes in
   * binary messages). Counted as a `get`, the RBAC verb of `virtualmachineinstances/vnc` and `/console`.
   */
  openVmiConsole(
    namespace: string,
    name: string,
    subresource: 'vnc' | 'console',
    maxPayload: number,
  ): Promise<WebSocket> {
    const path = `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(namespace)}/virtualmachineinstances/${encodeURIComponent(name)}/${subresource}`;
    const doing = `open the ${subresource} console of VirtualMachineInstance ${namespace}/${name}`;
    this.requestCounts.set('get', (this.requestCounts.get('get') ?? 0) + 1);
    // no retry: a console that did not open is answered to its user, who opens it again
    return openKubeWebSocket(this.kubeConfig, path, { protocol: 'plain.kubevirt.io', maxPayload, doing });
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
  async cloneApiVersion(): Promise<string> {
    let discovery = this.cloneVersion;
    if (discovery === undefined) {
      const asked = this.discoverCloneVersion();
      asked.catch(() => {
        if (this.cloneVersion === asked) this.cloneVersion = undefined;
      });
      this.cloneVersion = asked;
      discovery = asked;
    }
    return await discovery;
  }

  private async discoverCloneVersion(): Promise<string> {
    const doing = `discover the versions of ${cloneGroup}`;
    const group = await this.call('discover', doing, async () => {
      try {
        const text = await rawRequest(this.kubeConfig, 'GET', `/apis/${cloneGroup}`, undefined, (bytes) => {
          this.responseBytes += bytes;
        });
        return JSON.parse(text) as { versions?: { version: string }[] };
      } catch (error) {
        // an API group the apiserver does not serve is a plain 404
        if (apiFailureOf(error)?.status === 404) return { versions: [] };
        throw error;
      }
    });
    const served = (group.versions ?? []).map((entry) => entry.version);
    const version = cloneVersions.find((known) => served.includes(known));
    if (version !== undefined) return version;
    throw new VdiError(
      'UNSUPPORTED_BACKEND',
      `The cluster does not serve KubeVirt's clone API (${cloneGroup} ${cloneVersions.join(' or ')}), which VM ` +
        'pools make their members with. Install KubeVirt (v1.5.0 or later serves v1beta1) and check that its ' +
        'operator is running; if the apiserver was just restarting, try again.',
      { details: { group: cloneGroup, servedVersions: served } },
    );
  }

  // Reads on a cluster without KubeVirt's clone API find no clones; only a create needs it.
  private async servedCloneApi(): Promise<{ group: string; version: string; plural: string } | undefined> {
    try {
      return { group: cloneGroup, version: await this.cloneApiVersion(), plural: 'virtualmachineclones' };
    } catch (error) {
      if (isVdiError(error, 'UNSUPPORTED_BACKEND')) return undefined;
      throw error;
    }
  }

  /**
   * Creates a VirtualMachineClone in the newest `clone.kubevirt.io` version the cluster serves
   * ({@link KubeCluster.cloneApiVersion}).
   *
   * @throws `VdiError` `UNSUPPORTED_BACKEND` when the cluster has no clone API.
   */
  async createClone(namespace: string, clone: VirtualMachineClone): Promise<VirtualMachineClone> {
    const version = await this.cloneApiVersion();
    const api = { group: cloneGroup, version, plural: 'virtualmachineclones' };
    return await this.call('create', `create VirtualMachineClone ${namespace}/${clone.metadata.name}`, () =>
      this.custom.createNamespacedCustomObject({
        ...api,
        namespace,
        body: { ...clone, apiVersion: `${cloneGroup}/${version}`, kind: 'VirtualMachineClone' },
      }),
    );
  }

  /** Reads a VirtualMachineClone; `undefined` when there is none. */
  async getClone(namespace: string, name: string): Promise<VirtualMachineClone | undefined> {
    const api = await this.servedCloneApi();
    if (api === undefined) return undefined;
    return await this.getOrUndefined('get', `read VirtualMachineClone ${namespace}/${name}`, () =>
      this.custom.getNamespacedCustomObject({ ...api, namespace, name }),
    );
  }

  /** Lists the VirtualMachineClones of a namespace, optionally by label selector. */
  async listClones(namespace: string, labelSelector?: string): Promise<VirtualMachineClone[]> {
    const api = await this.servedCloneApi();
    if (api === undefined) return [];
    const list = await this.call('list', `list VirtualMachineClones in ${namespace}`, () =>
      this.custom.listNamespacedCustomObject({
        ...api,
        namespace,
        ...(labelSelector ? { labelSelector } : {}),
      }),
    );
    return (list as { items: VirtualMachineClone[] }).items;
  }

  /** Deletes a VirtualMachineClone. Gone already → `false`. */
  async deleteClone(namespace: string, name: string): Promise<boolean> {
    const api = await this.servedCloneApi();
    if (api === undefined) return false;
    const deleted = await this.getOrUndefined(
      'delete',
      `delete VirtualMachineClone ${namespace}/${name}`,
      () => this.custom.deleteNamespacedCustomObject({ ...api, namespace, name }),
    );
    return deleted !== undefined;
  }

  // ConfigMaps, Pods, Services and PersistentVolumeClaims (the container backend's objects)

  /** Reads a ConfigMap; `undefined` when there is none. */
  async getConfigMap(namespace: string, name: string): Promise<ConfigMapObject | undefined> {
    return (await this.getOrUndefined('get', `read ConfigMap ${namespace}/${name}`, () =>
      this.core.readNamespacedConfigMap({ namespace, name }),
    )) as ConfigMapObject | undefined;
  }

  /**
   * Lists the ConfigMaps of a namespace by label selector; with `cached`, from this process's synced cache of the
   * pools' ConfigMaps (those labelled `corral.dev/vdi-pool`) when the selector lies within it.
   */
  async listConfigMaps(
    namespace: string,
    labelSelector: string,
    options: ListOptions = {},
  ): Promise<ConfigMapObject[]> {
    const cached = options.cached ? this.caches.get(namespace)?.configMaps.list(labelSelector) : undefined;
    if (cached) return cached;
    const list = await this.call('list', `list ConfigMaps in ${namespace}`, () =>
      this.core.listNamespacedConfigMap({ namespace, labelSelector, ...listVersion(options) }),
    );
    return list.items as ConfigMapObject[];
  }

  /** Lists a namespace's ConfigMaps by label selector with the list's resourceVersion, where a watch starts. */
  async listConfigMapsToWatch(
    namespace: string,
    labelSelector: string,
  ): Promise<ListedObjects<ConfigMapObject>> {
    return await readAllPages((page) =>
      this.call('list', `list ConfigMaps in ${namespace}`, () =>
        this.core.listNamespacedConfigMap({ namespace, labelSelector, ...page }),
      ),
    );
  }

  /** Watches a namespace's ConfigMaps by label selector; resolves once the watch is open, with its end. */
  watchConfigMaps(namespace: string, labelSelector: string, from: WatchFrom): Promise<OpenWatch> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
    return this.call('watch', `watch ConfigMaps in ${namespace}`, () =>
      this.openWatch(`${path}${watchQuery(labelSelector, from)}`, from),
    );
  }

  /** Creates a ConfigMap. An existing one is `CONFLICT` with reason `AlreadyExists`. */
  async createConfigMap(namespace: string, configMap: ConfigMapObject): Promise<ConfigMapObject> {
    const created = (await this.call(
      'create',
      `create ConfigMap ${namespace}/${configMap.metadata.name}`,
      () => this.core.createNamespacedConfigMap({ namespace, body: configMap as never }),
    )) as ConfigMapObject;
    this.caches.get(namespace)?.configMaps.offer(created);
    return created;
  }

  /** Replaces a ConfigMap; its `metadata.resourceVersion` must be the one read, or `CONFLICT`. */
  async replaceConfigMap(namespace: string, configMap: ConfigMapObject): Promise<ConfigMapObject> {
    const name = configMap.metadata.name ?? '';
    const replaced = (await this.call('update', `replace ConfigMap ${namespace}/${name}`, () =>
      this.core.replaceNamespacedConfigMap({ namespace, name, body: configMap as never }),
    )) as ConfigMapObject;
    this.caches.get(namespace)?.configMaps.offer(replaced);
    return replaced;
  }

  /**
   * Deletes a ConfigMap only while it is the one read, letting the garbage collector delete what it owns in the
   * background. Gone already → `false`.
   */
  async deleteConfigMap(
    namespace: string,
    name: string,
    preconditions: DeletePreconditions,
  ): Promise<boolean> {
    const deleted = await this.getOrUndefined('delete', `delete ConfigMap ${namespace}/${name}`, () =>
      this.core.deleteNamespacedConfigMap({
        namespace,
        name,
        body: { preconditions, propagationPolicy: 'Background' },
      }),
    );
    // the background propagation leaves the ConfigMap no finalizer to wait for
    this.caches.get(namespace)?.configMaps.forget(name, preconditions.uid);
    return deleted !== undefined;
  }

  /** Reads a Pod; `undefined` when there is none. */
  async getPod(namespace: string, name: string): Promise<PodObject | undefined> {
    return (await this.getOrUndefined('get', `read Pod ${namespace}/${name}`, () =>
      this.core.readNamespacedPod({ namespace, name }),
    )) as PodObject | undefined;
  }

  /** Lists the Pods of a namespace, optionally by label selector. */
  async listPods(namespace: string, labelSelector?: string): Promise<PodObject[]> {
    const list = await this.call('list', `list Pods in ${namespace}`, () =>
      this.core.listNamespacedPod({ namespace, ...(labelSelector ? { labelSelector } : {}) }),
    );
    return list.items as PodObject[];
  }

  /** Lists the Pods of every namespace. */
  async listAllPods(): Promise<PodObject[]> {
    const list = await this.call('list', 'list Pods in all namespaces', () =>
      this.core.listPodForAllNamespaces(),
    );
    return list.items as PodObject[];
  }

  /** Creates a Pod. An existing one is `CONFLICT` with reason `AlreadyExists`. */
  async createPod(namespace: string, pod: PodObject): Promise<PodObject> {
    return (await this.call('create', `create Pod ${namespace}/${pod.metadata.name}`, () =>
      this.core.createNamespacedPod({ namespace, body: pod as never }),
    )) as PodObject;
  }

  /** Merge-patches a Pod; `metadata.resourceVersion` in the patch makes it conditional (stale → `CONFLICT`). */
  async patchPod(namespace: string, name: string, patch: Record<string, unknown>): Promise<PodObject> {
    return (await this.call('patch', `patch Pod ${namespace}/${name}`, () =>
      this.core.patchNamespacedPod({ namespace, name, body: patch }, mergePatch),
    )) as PodObject;
  }

  /**
   * Deletes a Pod only while it is the one read (`uid`), giving its containers `gracePeriodSeconds` to end (the
   * Pod's own setting when absent). Gone already → `false`.
   */
  async deletePod(
    namespace: string,
    name: string,
    preconditions: DeletePreconditions,
    gracePeriodSeconds?: number,
  ): Promise<boolean> {
    const deleted = await this.getOrUndefined('delete', `delete Pod ${namespace}/${name}`, () =>
      this.core.deleteNamespacedPod({
        namespace,
        name,
        body: { preconditions, ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }) },
      }),
    );
    return deleted !== undefined;
  }

  /** Reads a Service; `undefined` when there is none. */
  async getService(namespace: string, name: string): Promise<ServiceObject | undefined> {
    return (await this.getOrUndefined('get', `read Service ${namespace}/${name}`, () =>
      this.core.readNamespacedService({ namespace, name }),
    )) as ServiceObject | undefined;
  }

  /** Lists the Services of a namespace, optionally by label selector. */
  async listServices(namespace: string, labelSelector?: string): Promise<ServiceObject[]> {
    const list = await this.call('list', `list Services in ${namespace}`, () =>
      this.core.listNamespacedService({ namespace, ...(labelSelector ? { labelSelector } : {}) }),
    );
    return list.items as ServiceObject[];
  }

  /** Creates a Service. An existing one is `CONFLICT` with reason `AlreadyExists`. */
  async createService(namespace: string, service: ServiceObject): Promise<ServiceObject> {
    return (await this.call('create', `create Service ${namespace}/${service.metadata.name}`, () =>
      this.core.createNamespacedService({ namespace, body: service as never }),
    )) as ServiceObject;
  }

  /** Deletes a Service only while it is the one read (`uid`). Gone already → `false`. */
  async deleteService(namespace: string, name: string, preconditions: DeletePreconditions): Promise<boolean> {
    const deleted = await this.getOrUndefined('delete', `delete Service ${namespace}/${name}`, () =>
      this.core.deleteNamespacedService({ namespace, name, body: { preconditions } }),
    );
    return deleted !== undefined;
  }

  /** Lists the PersistentVolumeClaims of a namespace by label selector. */
  async listPvcs(namespace: string, labelSelector: string): Promise<PersistentVolumeClaimObject[]> {
    const list = await this.call('list', `list PersistentVolumeClaims in ${namespace}`, () =>
      this.core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector }),
    );
    return list.items as PersistentVolumeClaimObject[];
  }

  /** Creates a PersistentVolumeClaim. An existing one is `CONFLICT` with reason `AlreadyExists`. */
  async createPvc(namespace: string, pvc: PersistentVolumeClaimObject): Promise<PersistentVolumeClaimObject> {
    return (await this.call('create', `create PersistentVolumeClaim ${namespace}/${pvc.metadata.name}`, () =>
      this.core.createNamespacedPersistentVolumeClaim({ namespace, body: pvc as never }),
    )) as PersistentVolumeClaimObject;
  }

  /** Deletes a PersistentVolumeClaim only while it is the one read (`uid`). Gone already → `false`. */
  async deletePvc(namespace: string, name: string, preconditions: DeletePreconditions): Promise<boolean> {
    const deleted = await this.getOrUndefined(
      'delete',
      `delete PersistentVolumeClaim ${namespace}/${name}`,
      () => this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name, body: { preconditions } }),
    );
    return deleted !== undefined;
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
  openPodExecSocket(target: Omit<PodExecTarget, 'columns' | 'rows'>, maxPayload: number): Promise<WebSocket> {
    const query = new URLSearchParams({
      container: target.container,
      stdin: 'true',
      stdout: 'true',
      tty: 'true',
    });
    for (const part of target.command) query.append('command', part);
    const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/exec?${query}`;
    this.requestCounts.set('create', (this.requestCounts.get('create') ?? 0) + 1);
    // no retry: a terminal that did not open is answered to its user, who opens it again
    return openKubeWebSocket(this.kubeConfig, path, {
      protocol: 'v4.channel.k8s.io',
      maxPayload,
      doing: `exec in Pod ${target.namespace}/${target.pod}`,
    });
  }

  // Nodes and the KubeVirt configuration

  /** Lists the cluster's Nodes. */
  async listNodes(): Promise<NodeObject[]> {
    const list = await this.call('list', 'list Nodes', () => this.core.listNode());
    return list.items as NodeObject[];
  }

  /** The `permittedHostDevices` of the cluster's KubeVirt CR; empty when there is no CR or no such setting. */
  async getPermittedHostDevices(): Promise<PermittedHostDevices> {
    const list = await this.call('list', 'list KubeVirt configurations', () =>
      this.custom.listClusterCustomObject({ ...kubevirt, plural: 'kubevirts' }),
    );
    const [first] = (
      list as { items: Array<{ spec?: { configuration?: { permittedHostDevices?: PermittedHostDevices } } }> }
    ).items;
    return first?.spec?.configuration?.permittedHostDevices ?? {};
  }

  /** Whether a namespace exists. */
  async hasNamespace(name: string): Promise<boolean> {
    return (
      (await this.getOrUndefined('get', `read Namespace ${name}`, () =>
        this.core.readNamespace({ name }),
      )) !== undefined
    );
  }
}
