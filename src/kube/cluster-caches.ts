import type { Clock } from '../clock.js';
import type { VdiError } from '../errors.js';
import { poolLabel } from '../keys.js';
import type { ConfigMapObject, LeaseObject } from '../kube-objects.js';
import type { VirtualMachine, VirtualMachineInstance } from '../kubevirt-types.js';
import { storedConfigMap, storedLease, storedVm, storedVmi } from './cache-transforms.js';
import type { Sleep } from './retry.js';
import { type ListedObjects, WatchCache, type WatchCacheSource } from './watch-cache.js';
import type { OpenWatch, WatchEvent } from './watch-stream.js';

/** Where a watch starts, whom it tells, and what stops it. */
export interface WatchFrom {
  /** The resourceVersion to watch from: the list's, or the last one seen. */
  resourceVersion: string;
  /** Hears each event as it arrives. */
  onEvent: (event: WatchEvent) => void;
  /** Ends the watch. */
  signal: AbortSignal;
}

/** The objects each of a namespace's caches holds, by cache. */
export interface CachedObjects {
  leases: LeaseObject;
  vms: VirtualMachine;
  vmis: VirtualMachineInstance;
  configMaps: ConfigMapObject;
}

/** The adapter's list and watch calls the caches are made of, each counted like every other request. */
export interface CacheSources {
  /**
   * Lists what `cache` holds in a namespace (by label selector), with the list's resourceVersion, where its watch
   * starts; `keep` cuts each object down as its page arrives.
   */
  listToCache<C extends keyof CachedObjects>(
    cache: C,
    namespace: string,
    labelSelector: string | undefined,
    keep?: (object: CachedObjects[C]) => CachedObjects[C],
  ): Promise<ListedObjects<CachedObjects[C]>>;
  /** Watches what `cache` holds in a namespace (by label selector); resolves once the watch is open. */
  watchToCache(
    cache: keyof CachedObjects,
    namespace: string,
    labelSelector: string | undefined,
    from: WatchFrom,
  ): Promise<OpenWatch>;
}

/**
 * What the caches of one namespace hold: its Leases, the pool members' VMs, every VMI, and the pools' ConfigMaps
 * (container pools' specs and pools' settings).
 */
export interface NamespaceCaches {
  leases: WatchCache<LeaseObject>;
  vms: WatchCache<VirtualMachine>;
  vmis: WatchCache<VirtualMachineInstance>;
  configMaps: WatchCache<ConfigMapObject>;
}

/** Options of `KubeCluster.startCaches`. */
export interface StartCachesOptions {
  /** Decides the resync bound. */
  clock: Clock;
  /** How a cache waits between restarts after a failure. @defaultValue real timers */
  sleep?: Sleep;
  /** Hears every failed list or watch, naming what the cache holds. */
  onFailure?: (error: VdiError, cached: string) => void;
}

/**
 * How old a cache's last list may grow before the next watch restart lists again: the longest an event the watch
 * missed can go unnoticed (plus one watch, {@link watchTimeoutSeconds}).
 */
export const cacheResyncMs = 10 * 60_000;

/**
 * How long the apiserver keeps one watch open; it ends it then (with a bookmark just before) and the cache goes on
 * from the last resourceVersion.
 */
export const watchTimeoutSeconds = 240;

const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Runs `run` once one of a few slots is free: at most `count` runs at once, the others in the order they came. */
export type Slots = <T>(run: () => Promise<T>) => Promise<T>;

/** {@link Slots} of `count`. */
export function createSlots(count: number): Slots {
  let running = 0;
  const queued: Array<() => void> = [];
  return async (run) => {
    if (running >= count) await new Promise<void>((resolve) => queued.push(resolve));
    else running += 1;
    try {
      return await run();
    } finally {
      const next = queued.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

/**
 * How many caches of a process list at once, over all its namespaces: each holds a page of whole objects as it
 * reads, and a broker that started 80 lists at once held 80 pages, which the allocator kept long after.
 */
export const cacheListsAtOnce = 4;

/** Starts the watch caches of one namespace; their lists take `listing`'s slots. */
export function startNamespaceCaches(
  sources: CacheSources,
  namespace: string,
  options: StartCachesOptions,
  listing: Slots = (run) => run(),
): NamespaceCaches {
  const cacheOf = <T extends { metadata: { name?: string } }>(source: WatchCacheSource<T>) =>
    new WatchCache<T>(source, {
      clock: options.clock,
      resyncMs: cacheResyncMs,
      sleep: options.sleep ?? realSleep,
      onFailure: (error) => options.onFailure?.(error, source.describe),
    });
  const source = <C extends keyof CachedObjects>(
    cache: C,
    describe: string,
    labelSelector: string | undefined,
    transform: (object: CachedObjects[C]) => CachedObjects[C],
  ): WatchCacheSource<CachedObjects[C]> => ({
    describe,
    labelSelector,
    transform,
    list: () => listing(() => sources.listToCache(cache, namespace, labelSelector, transform)),
    watch: (resourceVersion, onEvent, signal) =>
      sources.watchToCache(cache, namespace, labelSelector, { resourceVersion, onEvent, signal }),
  });
  return {
    // every Lease, not the claims alone: a claim waits for its claimant Lease's own event here (see claims.md)
    leases: cacheOf(source('leases', `Leases in ${namespace}`, undefined, storedLease)),
    vms: cacheOf(source('vms', `pool VirtualMachines in ${namespace}`, poolLabel, storedVm)),
    vmis: cacheOf(source('vmis', `VirtualMachineInstances in ${namespace}`, undefined, storedVmi)),
    // the broker's loops find the pools they keep here: a container pool's spec, a pool's settings
    configMaps: cacheOf(source('configMaps', `pool ConfigMaps in ${namespace}`, poolLabel, storedConfigMap)),
  };
}
