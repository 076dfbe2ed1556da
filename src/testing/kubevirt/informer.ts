import { CoreV1Api, CustomObjectsApi, type KubeConfig, Watch } from '@kubernetes/client-node';
import type { ObjectMeta } from '../../kube-objects.js';
import { pause } from './pause.js';

/** The part of an object the cache needs. */
export interface CachedObject {
  metadata: Pick<ObjectMeta, 'name' | 'namespace' | 'uid' | 'resourceVersion'>;
}

/** Where a custom resource lives. */
export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
}

/** The core resources an informer can watch, across all namespaces. */
export type CoreResource = 'namespaces' | 'nodes' | 'pods';

/** Options of {@link startInformer}. */
export interface InformerOptions<T> {
  kubeConfig: KubeConfig;
  /** A custom resource, or one of the core resources the simulators watch. */
  resource: ResourceRef | CoreResource;
  /** Called with the `namespace/name` of every object that changed (and its new state) or went away. */
  onChange: (key: string, current: T | undefined) => void;
  log: (line: string) => void;
}

/** A list-and-watch cache of one resource across all namespaces (or of a cluster-wide one). */
export interface Informer<T extends CachedObject> {
  get(key: string): T | undefined;
  keys(): IterableIterator<string>;
  /** Records an object this process just wrote, so reads see it before its watch event arrives. */
  remember(object: T): void;
  /** Records that this process just deleted the object with `uid`. */
  forget(key: string, uid: string | undefined): void;
  stop(): void;
}

/** The `namespace/name` key of an object. */
export function keyOf(object: CachedObject): string {
  return `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
}

// Enough to cover every deletion of a large test run; the oldest are forgotten first.
const maxTombstones = 20_000;

// Servers end a watch at timeoutSeconds; client-node aborts one that is silent for 30 s, so ask for less.
const watchSeconds = 25;

/** Whether a resourceVersion is newer than another; etcd's are integers, anything else counts as newer. */
export function isNewerVersion(candidate: string | undefined, than: string | undefined): boolean {
  if (candidate === undefined || than === undefined) return true;
  if (!/^[0-9]+$/.test(candidate) || !/^[0-9]+$/.test(than)) return candidate !== than;
  return BigInt(candidate) > BigInt(than);
}

/**
 * Lists a resource, then watches it from the list's resourceVersion, restarting the watch when it ends and
 * listing again when the apiserver says the version is too old (410). Resolves once the first list is cached.
 * Events are compared by resourceVersion, so an event older than what this process wrote is ignored.
 */
export async function startInformer<T extends CachedObject>(
  options: InformerOptions<T>,
): Promise<Informer<T>> {
  const { kubeConfig, resource, onChange, log } = options;
  const watch = new Watch(kubeConfig);
  const path =
    typeof resource === 'string'
      ? `/api/v1/${resource}`
      : `/apis/${resource.group}/${resource.version}/${resource.plural}`;
  const listPage = (page: { limit: number; _continue: string | undefined }) => {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    if (resource === 'namespaces') return core.listNamespace(page);
    if (resource === 'nodes') return core.listNode(page);
    if (resource === 'pods') return core.listPodForAllNamespaces(page);
    return kubeConfig.makeApiClient(CustomObjectsApi).listClusterCustomObject({ ...resource, ...page });
  };
  const objects = new Map<string, T>();
  // UIDs known to be deleted: an answer to a write that raced the delete must not bring the object back.
  const deletedUids = new Set<string>();
  const bury = (uid: string | undefined) => {
    if (uid === undefined) return;
    deletedUids.add(uid);
    if (deletedUids.size > maxTombstones) deletedUids.delete(deletedUids.values().next().value as string);
  };
  const stopping = new AbortController();
  let resourceVersion: string | undefined;
  let current: AbortController | undefined;

  const offer = (object: T) => {
    const key = keyOf(object);
    if (object.metadata.uid !== undefined && deletedUids.has(object.metadata.uid)) return;
    const known = objects.get(key);
    // resourceVersions grow across the whole cluster, so this also orders a re-created object after its predecessor.
    if (known && !isNewerVersion(object.metadata.resourceVersion, known.metadata.resourceVersion)) return;
    objects.set(key, object);
    onChange(key, object);
  };

  const drop = (object: T) => {
    const key = keyOf(object);
    bury(object.metadata.uid);
    const known = objects.get(key);
    if (!known || known.metadata.uid !== object.metadata.uid) return;
    objects.delete(key);
    onChange(key, undefined);
  };

  const list = async () => {
    const seen = new Set<string>();
    let continueToken: string | undefined;
    do {
      const page = (await listPage({ limit: 500, _continue: continueToken })) as unknown as {
        items: T[];
        metadata: { resourceVersion?: string; continue?: string };
      };
      for (const item of page.items) {
        seen.add(keyOf(item));
        offer(item);
      }
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (continueToken);
    for (const [key, object] of objects) if (!seen.has(key)) drop(object);
  };

  const watchOnce = () =>
    new Promise<void>((resolve) => {
      const handle = (type: string, object: T & { code?: number }) => {
        if (type === 'ERROR') {
          // 410 Gone: the version is compacted away; list again.
          if (object.code === 410) resourceVersion = undefined;
          current?.abort();
          return;
        }
        resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
        if (type === 'ADDED' || type === 'MODIFIED') offer(object);
        else if (type === 'DELETED') drop(object);
      };
      const query = { allowWatchBookmarks: true, resourceVersion, timeoutSeconds: watchSeconds };
      watch
        .watch(path, query, handle, (error: unknown) => {
          if (error && !stopping.signal.aborted && (error as Error).name !== 'AbortError') {
            log(`watch ${path} ended: ${(error as Error).message ?? String(error)}`);
          }
          resolve();
        })
        .then((controller) => {
          current = controller;
          if (stopping.signal.aborted) controller.abort();
        })
        .catch((error: unknown) => {
          log(`watch ${path} failed: ${(error as Error).message}`);
          resolve();
        });
    });

  const run = async () => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      const started = Date.now();
      try {
        if (resourceVersion === undefined) await list();
        await watchOnce();
      } catch (error) {
        log(`list ${path} failed: ${(error as Error).message}`);
      }
      // A watch that ends at once (apiserver gone, group not served) backs off; a long one does not.
      failures = Date.now() - started < 1000 ? failures + 1 : 0;
      if (failures > 0) await pause(Math.min(100 * 2 ** failures, 5000), stopping.signal);
    }
  };

  await list();
  void run();

  return {
    get: (key) => objects.get(key),
    keys: () => objects.keys(),
    remember: offer,
    forget: (key, uid) => {
      const known = objects.get(key);
      bury(uid);
      if (known && (uid === undefined || known.metadata.uid === uid)) {
        objects.delete(key);
        onChange(key, undefined);
      }
    },
    stop: () => {
      stopping.abort();
      current?.abort();
    },
  };
}
