import { isVdiError, VdiError } from '../errors.js';
import type { ObjectMeta } from '../kube-objects.js';
import { type NamespaceCaches, type WatchFrom, watchTimeoutSeconds } from './cluster-caches.js';
import type { ListedObjects, WatchCache } from './watch-cache.js';
import type { OpenWatch } from './watch-stream.js';

/**
 * One Kubernetes resource as the SDK reads and writes it: where the apiserver serves it, how its objects cross the
 * wire, and which of this process's watch caches its writes and cached lists go through. Every verb of
 * {@link ResourceClient} is written once for all of them; a new kind is a new descriptor.
 *
 * @example
 * const endpointSlices: ResourceKind<EndpointSliceObject> = {
 *   kind: 'EndpointSlice', group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true,
 * };
 * const slices = await vdi.context.cluster.resource(endpointSlices).in('corral-vms').list('app=desk');
 *
 * @category adapters
 */
export interface ResourceKind<K extends KubeObject, S extends string = never> {
  /** The object kind, written on every create and replace and named in messages: `Lease`. */
  kind: string;
  /** The API group; `''` for the core group, served under `/api/v1`. */
  group: string;
  /** The version, or the versions the newest served one is discovered from. */
  version: string | DiscoveredVersion;
  /** The collection's name in paths: `leases`. */
  plural: string;
  namespaced: boolean;
  /** The subresources the SDK uses: {@link ResourceClient.subresourcePath} takes only these. */
  subresources?: readonly S[];
  /** The group of the kind's subresources when an aggregated API serves them apart (KubeVirt's `stop`, `vnc`). */
  subresourceGroup?: string;
  /** Turns an object from the apiserver's JSON into the SDK's form; as it comes when absent. */
  fromWire?(object: unknown): K;
  /** Turns the SDK's object into the JSON the apiserver takes; as it is when absent. */
  toWire?(object: K): unknown;
  /** The watch cache of a namespace that this kind's writes reach at once and its cached lists are read from. */
  cache?: keyof NamespaceCaches;
  /** A 409 on a create or replace is a lost race worth a metric of its own ({@link KubeRequestObserver}). */
  conflictsCounted?: true;
  /** Its objects keep no finalizers here, so a delete that went through removed the object and its cache forgets it. */
  goneOnDelete?: true;
}

/** Versions of an API group, newest first, of which the newest the cluster serves is used; found once and kept. */
export interface DiscoveredVersion {
  discover: readonly string[];
  /** The API's name in the message when the cluster serves none of them: `KubeVirt's clone API`. */
  apiName: string;
  /** The rest of that message: what needs the API and what to do. Reads then find nothing; writes fail with it. */
  whenUnserved: string;
}

/** What every object has. */
export interface KubeObject {
  metadata: ObjectMeta;
}

/** An object carrying the resourceVersion it was read at: a replace of it is refused (409) once it changed. */
export type Versioned<K extends KubeObject> = K & { metadata: { resourceVersion: string } };

/** Preconditions of a delete: it is refused (409) when the object changed since it was read. */
export interface DeletePreconditions {
  uid?: string;
  resourceVersion?: string;
}

/** How a delete goes: only while the object is the one read, and how its dependents and containers end. */
export interface DeleteOptions {
  /** `{}` deletes whatever object has the name. */
  preconditions: DeletePreconditions;
  /** The seconds a Pod's containers get to end; the Pod's own setting when absent. */
  gracePeriodSeconds?: number;
  /** `Background`: delete at once and let the garbage collector delete what it owns. */
  propagationPolicy?: 'Background';
  /** `['All']`: the apiserver authorizes and checks the delete and deletes nothing. */
  dryRun?: ['All'];
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
   * own watch cache once that has caught up, without a quorum read of etcd.
   */
  notOlderThan?: string;
  /**
   * With `notOlderThan`: how long to wait for this process's synced cache to see that version (its own write's event
   * is on the way) before asking the apiserver. @defaultValue 0
   */
  cacheWaitMs?: number;
  /**
   * Lists of one request that ask the apiserver for the same answer share one read: the first one's, kept here by
   * path and query (the broker's pools route reads a namespace's pools and their plans through separate services).
   */
  shared?: SharedReads;
}

/** The lists a request has asked the apiserver for, by path and query; see {@link ListOptions.shared}. */
export type SharedReads = Map<string, Promise<readonly unknown[]>>;

/** One page of a list: up to `limit` objects from `continue` (the first page without it). */
export interface PageRequest {
  limit: number;
  continue?: string;
}

/** A page of a list and where the next one starts, when there is one. */
export interface ListPage<K> {
  items: K[];
  continue?: string;
}

/** A merge patch (RFC 7386): the fields to set, `null` for a key to remove. */
export type MergePatch = Record<string, unknown>;

/** How a patch goes: with `lock`, only while the object is still at that resourceVersion (stale → `CONFLICT`). */
export interface PatchOptions {
  lock?: string;
}

/** The adapter's side of a {@link ResourceClient}: its requests, its caches and its API discovery. */
export interface ResourceTransport {
  /** Sends one request, retried when transient, counted under `verb` and translated to `VdiError`; its JSON answer. */
  send(
    verb: string,
    doing: string,
    request: { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; path: string; body?: unknown },
  ): Promise<unknown>;
  /** Opens a watch of a collection path and query, counted and retried like a request. */
  watch(
    doing: string,
    pathAndQuery: string,
    from: WatchFrom,
    convert: (object: unknown) => unknown,
  ): Promise<OpenWatch>;
  /** The watch caches of a namespace, when started. */
  cachesOf(namespace: string): NamespaceCaches | undefined;
  /**
   * The version of `kind` the cluster serves.
   * @throws `VdiError` `UNSUPPORTED_BACKEND` when it serves none of a discovered kind's versions.
   */
  versionOf(kind: ResourceKind<KubeObject, string>): Promise<string>;
  /** Tells the observers that a write of a kind with {@link ResourceKind.conflictsCounted} met a 409. */
  conflict(verb: 'create' | 'update'): void;
}

interface WireList {
  items: unknown[];
  metadata?: { resourceVersion?: string; continue?: string };
}

// as client-go's pager: a watch cache's first list of a big namespace comes in pages of this many, never as one
// answer the apiserver must build and the process must hold whole
const listPageSize = 500;

// resourceVersion 0 lets the apiserver answer from its watch cache instead of a quorum read of etcd; any other
// value asks for an answer not older than it, which the apiserver serves from its watch cache too
function listVersion(options: ListOptions): Record<string, string> {
  if (options.notOlderThan !== undefined) return { resourceVersion: options.notOlderThan };
  return options.cached ? { resourceVersion: '0' } : {};
}

function queryOf(parameters: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(parameters)) if (value) query.set(key, value);
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

/** Turns a descriptor's `version` into a path root: `/api/v1` for the core group, `/apis/{group}/{version}` else. */
function apiRoot(group: string, version: string): string {
  return group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
}

/**
 * The one typed accessor of a {@link ResourceKind}: every verb written once for every kind, with the namespace bound
 * once by {@link ResourceClient.in}. Without a namespace it reads every namespace's objects (or a cluster-scoped
 * kind's). Writes reach the kind's watch cache at once (read-your-writes), cached lists are answered from it within
 * its staleness bound, and every failure is a `VdiError` translated in one place.
 *
 * @category adapters
 */
export class ResourceClient<K extends KubeObject, S extends string = never> {
  readonly kind: ResourceKind<K, S>;
  /** The namespace bound, or `undefined` for every namespace (or a cluster-scoped kind). */
  readonly namespace: string | undefined;
  private readonly transport: ResourceTransport;

  constructor(transport: ResourceTransport, kind: ResourceKind<K, S>, namespace?: string) {
    this.transport = transport;
    this.kind = kind;
    this.namespace = namespace;
  }

  /** The same accessor bound to `namespace`. */
  in(namespace: string): ResourceClient<K, S> {
    return new ResourceClient(this.transport, this.kind, namespace);
  }

  /** Reads one object; `undefined` when there is none (or the cluster serves none of a discovered kind's versions). */
  async get(name: string): Promise<K | undefined> {
    const path = await this.servedPath(name);
    if (path === undefined) return undefined;
    const read = await this.orUndefinedWhenMissing(
      this.transport.send('get', `read ${this.named(name)}`, { method: 'GET', path }),
    );
    return read === undefined ? undefined : this.fromWire(read);
  }

  /**
   * Lists the objects, optionally by label selector, in one request; with `cached` or `notOlderThan` from this
   * process's synced watch cache when the kind has one and it can answer ({@link ListOptions}).
   */
  async list(labelSelector?: string, options: ListOptions = {}): Promise<K[]> {
    const cache = this.cache();
    const { notOlderThan, cacheWaitMs } = options;
    if (notOlderThan !== undefined && cacheWaitMs) await cache?.seen(notOlderThan, cacheWaitMs);
    const cached =
      notOlderThan !== undefined
        ? cache?.listSeenSince(labelSelector, notOlderThan)
        : options.cached
          ? cache?.list(labelSelector)
          : undefined;
    if (cached) return cached;
    const path = await this.servedPath();
    if (path === undefined) return [];
    const asked = `${path}${queryOf({ labelSelector, ...listVersion(options) })}`;
    const sharedRead = options.shared?.get(asked);
    if (sharedRead) return [...(await sharedRead)] as K[];
    const read = this.readList(asked);
    options.shared?.set(asked, read);
    return [...(await read)];
  }

  private async readList(path: string): Promise<K[]> {
    const list = (await this.transport.send('list', `list ${this.plural()}`, {
      method: 'GET',
      path,
    })) as WireList;
    return list.items.map((item) => this.fromWire(item));
  }

  /**
   * One page of the objects by label selector, and where the next page starts. A consistent read, which a current
   * apiserver serves from its watch cache with the limit kept (a list at resourceVersion 0 would ignore the limit).
   */
  async listPage(labelSelector: string | undefined, page: PageRequest): Promise<ListPage<K>> {
    const path = await this.servedPath();
    if (path === undefined) return { items: [] };
    const list = await this.readPage(path, labelSelector, page);
    const next = list.metadata?.continue || undefined;
    return {
      items: list.items.map((item) => this.fromWire(item)),
      ...(next === undefined ? {} : { continue: next }),
    };
  }

  /**
   * Lists every object by label selector page by page with the list's resourceVersion, where a watch of them starts:
   * the pages of one list are one snapshot. `keep` cuts each object down as its page arrives, so a page's whole
   * objects are not held until the last page.
   */
  async listToWatch(
    labelSelector?: string,
    keep: (object: K) => K = (object) => object,
  ): Promise<ListedObjects<K>> {
    const path = await this.servedPath();
    if (path === undefined) return { items: [], resourceVersion: '' };
    const items: K[] = [];
    let resourceVersion = '';
    let next: string | undefined;
    do {
      const list = await this.readPage(path, labelSelector, {
        limit: listPageSize,
        ...(next === undefined ? {} : { continue: next }),
      });
      for (const item of list.items) items.push(keep(this.fromWire(item)));
      resourceVersion = list.metadata?.resourceVersion ?? resourceVersion;
      next = list.metadata?.continue || undefined;
    } while (next !== undefined);
    return { items, resourceVersion };
  }

  /** Watches the objects by label selector from `from.resourceVersion`; resolves once the watch is open, with its end. */
  async watch(labelSelector: string | undefined, from: WatchFrom): Promise<OpenWatch> {
    const path = await this.collectionPath();
    const query = queryOf({
      watch: 'true',
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(watchTimeoutSeconds),
      resourceVersion: from.resourceVersion,
      labelSelector,
    });
    return await this.transport.watch(`watch ${this.plural()}`, `${path}${query}`, from, (object) =>
      this.fromWire(object),
    );
  }

  /**
   * Creates an object. One of that name already there is `CONFLICT` with reason `AlreadyExists`. With `dryRun` the
   * apiserver decodes, defaults, admits and authorizes it as a create and stores nothing (`dryRun=All`).
   */
  async create(object: K, options: { dryRun?: boolean } = {}): Promise<K> {
    const path = await this.collectionPath();
    const created = await this.write('create', object.metadata.name ?? object.metadata.generateName ?? '', {
      method: 'POST',
      path: `${path}${queryOf({ dryRun: options.dryRun ? 'All' : undefined })}`,
      body: await this.toWire(object),
    });
    if (!options.dryRun) this.cache()?.offer(created);
    return created;
  }

  /** Replaces an object; `CONFLICT` with reason `Conflict` once it changed since the resourceVersion it carries. */
  async replace(object: Versioned<K>): Promise<K> {
    const name = object.metadata.name ?? '';
    const replaced = await this.write('update', name, {
      method: 'PUT',
      path: `${await this.collectionPath()}/${encodeURIComponent(name)}`,
      body: await this.toWire(object),
    });
    this.cache()?.offer(replaced);
    return replaced;
  }

  /** Merge-patches an object; with `lock`, only while it is still at that resourceVersion (stale → `CONFLICT`). */
  async patch(name: string, patch: MergePatch, options: PatchOptions = {}): Promise<K> {
    const body =
      options.lock === undefined
        ? patch
        : {
            ...patch,
            metadata: { ...(patch.metadata as object | undefined), resourceVersion: options.lock },
          };
    const patched = this.fromWire(
      await this.transport.send('patch', `patch ${this.named(name)}`, {
        method: 'PATCH',
        path: `${await this.collectionPath()}/${encodeURIComponent(name)}`,
        body,
      }),
    );
    this.cache()?.offer(patched);
    return patched;
  }

  /**
   * Deletes an object while it meets `preconditions` (changed since → `CONFLICT`). Gone already, or a discovered
   * kind the cluster does not serve → `false`.
   */
  async delete(name: string, options: DeleteOptions): Promise<boolean> {
    const path = await this.servedPath(name);
    if (path === undefined) return false;
    const deleted = await this.orUndefinedWhenMissing(
      this.transport.send('delete', `delete ${this.named(name)}`, { method: 'DELETE', path, body: options }),
    );
    // the delete went through or the object was gone already: either way the cache must not keep it
    if (this.kind.goneOnDelete) this.cache()?.forget(name, options.preconditions.uid);
    return deleted !== undefined;
  }

  /** The path of one object's subresource, in the kind's subresource group when it has one. */
  async subresourcePath(name: string, subresource: S): Promise<string> {
    const { group, plural, subresourceGroup } = this.kind;
    const version = await this.transport.versionOf(this.kind);
    return `${apiRoot(subresourceGroup ?? group, version)}${this.namespacePart()}/${plural}/${encodeURIComponent(name)}/${subresource}`;
  }

  /** `Lease corral-vms/desk-1`, for messages. */
  named(name: string): string {
    return `${this.kind.kind} ${this.namespace === undefined ? '' : `${this.namespace}/`}${name}`;
  }

  private plural(): string {
    const { kind, namespaced } = this.kind;
    if (!namespaced) return `${kind}s`;
    return `${kind}s in ${this.namespace ?? 'all namespaces'}`;
  }

  private namespacePart(): string {
    return this.namespace === undefined ? '' : `/namespaces/${encodeURIComponent(this.namespace)}`;
  }

  private async collectionPath(): Promise<string> {
    const version = await this.transport.versionOf(this.kind);
    return `${apiRoot(this.kind.group, version)}${this.namespacePart()}/${this.kind.plural}`;
  }

  // Reads of a discovered kind the cluster does not serve find nothing; only a write needs it served.
  private async servedPath(name?: string): Promise<string | undefined> {
    try {
      const path = await this.collectionPath();
      return name === undefined ? path : `${path}/${encodeURIComponent(name)}`;
    } catch (error) {
      if (typeof this.kind.version !== 'string' && isVdiError(error, 'UNSUPPORTED_BACKEND')) return undefined;
      throw error;
    }
  }

  private async readPage(
    path: string,
    labelSelector: string | undefined,
    page: PageRequest,
  ): Promise<WireList> {
    return (await this.transport.send('list', `list ${this.plural()}`, {
      method: 'GET',
      path: `${path}${queryOf({ labelSelector, limit: String(page.limit), continue: page.continue })}`,
    })) as WireList;
  }

  private async write(
    verb: 'create' | 'update',
    name: string,
    request: { method: 'POST' | 'PUT'; path: string; body: unknown },
  ): Promise<K> {
    const doing = `${verb === 'create' ? 'create' : 'replace'} ${this.named(name)}`;
    try {
      return this.fromWire(await this.transport.send(verb, doing, request));
    } catch (error) {
      if (this.kind.conflictsCounted && isVdiError(error, 'CONFLICT')) this.transport.conflict(verb);
      throw error;
    }
  }

  // not an unserved API group: that 404 is translated to CLUSTER_UNAVAILABLE
  private async orUndefinedWhenMissing(request: Promise<unknown>): Promise<unknown> {
    try {
      return await request;
    } catch (error) {
      if (isVdiError(error, 'NOT_FOUND')) return undefined;
      throw error;
    }
  }

  private cache(): WatchCache<K> | undefined {
    const { cache } = this.kind;
    if (cache === undefined || this.namespace === undefined) return undefined;
    return this.transport.cachesOf(this.namespace)?.[cache] as WatchCache<K> | undefined;
  }

  private fromWire(object: unknown): K {
    return this.kind.fromWire ? this.kind.fromWire(object) : (object as K);
  }

  private async toWire(object: K): Promise<unknown> {
    const { group, kind, toWire } = this.kind;
    const version = await this.transport.versionOf(this.kind);
    const wire = (toWire ? toWire(object) : object) as object;
    return { ...wire, apiVersion: group === '' ? version : `${group}/${version}`, kind };
  }
}

/** Asserts that an object carries the resourceVersion it was read at, as a replace needs. */
export function versioned<K extends KubeObject>(object: K, doing: string): Versioned<K> {
  if (object.metadata.resourceVersion) return object as Versioned<K>;
  throw new VdiError(
    'INVALID_INPUT',
    `Could not ${doing}: it carries no metadata.resourceVersion. Replace an object as read, so that a change made since is refused instead of overwritten.`,
  );
}
