import type { Clock } from '../clock.js';
import { isVdiError, VdiError } from '../errors.js';
import type { ObjectMeta } from '../kube-objects.js';
import { toVdiError } from './errors.js';
import { isWithinSelector, matchesLabels, parseLabelSelector } from './label-selector.js';
import type { Sleep } from './retry.js';
import type { OpenWatch, WatchEvent } from './watch-stream.js';

/** What a watch cache needs of an object. */
export interface CachedObject {
  metadata: ObjectMeta;
}

/** A list as a watch starts from it: the objects and the list's resourceVersion. */
export interface ListedObjects<T> {
  items: T[];
  resourceVersion: string;
}

/** Where a watch cache reads one resource of one namespace: a list, and a watch from a resourceVersion. */
export interface WatchCacheSource<T> {
  /** What is cached, for messages: `Leases in corral-vms`. */
  describe: string;
  /** The label selector of both the list and the watch; every object of the namespace when undefined. */
  labelSelector: string | undefined;
  /**
   * What the cache keeps of each object it lists, hears of or is offered: the fields its readers use, as client-go's
   * informer transforms keep them, so a big namespace costs the process what it reads and no more.
   */
  transform(object: T): T;
  /** Lists what is cached, with the list's resourceVersion. */
  list(): Promise<ListedObjects<T>>;
  /** Opens a watch from `resourceVersion`; resolves once it is open. */
  watch(
    resourceVersion: string,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<OpenWatch>;
}

/** How a watch cache keeps up: its clock, its resync bound and how it waits between restarts. */
export interface WatchCacheOptions {
  clock: Clock;
  /** List again at the first restart after the last list is this old, in ms: how long a missed event can last. */
  resyncMs: number;
  /** How the cache waits before a restart after a failure; tests pass one that records the waits. */
  sleep: Sleep;
  /** Hears every failure of a list or a watch; the cache tries again after a backoff. */
  onFailure(error: VdiError): void;
}

/** How one list-and-watch round ended. */
export type WatchEnd = 'closed' | 'expired' | 'failed';

/** What a watch cache does after a round: list again or go on watching, and how long it waits first. */
export interface WatchRestartPlan {
  relist: boolean;
  failures: number;
  waitMs: number;
}

const firstBackoffMs = 500;
const maxBackoffMs = 30_000;

/**
 * Plans the restart after a watch ended: a close (the apiserver's `timeoutSeconds`) goes on from the last
 * resourceVersion at once; `expired` (410 Gone: that version is compacted away) lists again; a failure waits a
 * doubling backoff up to 30 s. Any of them lists again once the last list is older than the resync bound.
 */
export function planWatchRestart(input: {
  end: WatchEnd;
  failures: number;
  listedAtMs: number;
  nowMs: number;
  resyncMs: number;
}): WatchRestartPlan {
  const stale = input.nowMs - input.listedAtMs >= input.resyncMs;
  if (input.end === 'failed') {
    const failures = input.failures + 1;
    const waitMs = Math.min(firstBackoffMs * 2 ** (failures - 1), maxBackoffMs);
    return { relist: stale, failures, waitMs };
  }
  return { relist: stale || input.end === 'expired', failures: 0, waitMs: 0 };
}

/** Whether resourceVersion `candidate` is newer than `known`; etcd's are integers, anything else counts as newer. */
export function isNewerVersion(candidate: string | undefined, known: string | undefined): boolean {
  if (candidate === undefined || known === undefined) return true;
  if (!/^[0-9]+$/.test(candidate) || !/^[0-9]+$/.test(known)) return candidate !== known;
  return BigInt(candidate) > BigInt(known);
}

/** A change a watch cache saw: an object added, modified or deleted, as it now is (or last was). */
export type CacheChange<T> = { type: 'added' | 'modified' | 'deleted'; object: T };

// enough for every deletion between two resyncs of a busy namespace; the oldest are forgotten first
const maxTombstones = 10_000;
// the selectors of a few pools, beside the identities' own ones that come and go
const maxKeptAnswers = 16;

/**
 * One resource of one namespace, listed once and then kept up by a watch with bookmarks: restarted from the last
 * resourceVersion when the apiserver ends it, listed again after 410 Gone or once the last list is older than the
 * resync bound, and after a failure only after a backoff. Writes of this process are offered to it as they
 * succeed, so its reads see them before their events arrive; an event older than what it holds is ignored.
 */
export class WatchCache<T extends CachedObject> {
  private readonly objects = new Map<string, T>();
  // UIDs this cache saw deleted: an older event or write answer must not bring the object back
  private readonly buried = new Set<string>();
  private readonly listeners = new Set<(change: CacheChange<T>) => void>();
  private readonly selector;
  private readonly stopping = new AbortController();
  private lastVersion: string | undefined;
  private listedAtMs = 0;
  private owesList = true;
  private isSyncedNow = false;
  private failure: VdiError | undefined;
  private readonly waiters = new Set<{ resolve: () => void; reject: (error: VdiError) => void }>();
  // a storm of claims lists the same pool many times between two changes: a few selectors' answers are kept till one
  private changes = 0;
  private readonly answers = new Map<string, { changes: number; objects: T[] }>();
  // readers waiting for this cache to see a resourceVersion, each with what ends its wait
  private readonly versionWaiters = new Map<string, Set<() => void>>();

  private readonly source: WatchCacheSource<T>;
  private readonly options: WatchCacheOptions;

  // plain fields, not parameter properties: the fault suites run this file with Node's type stripping
  constructor(source: WatchCacheSource<T>, options: WatchCacheOptions) {
    this.source = source;
    this.options = options;
    this.selector = parseLabelSelector(source.labelSelector ?? '') ?? [];
    void this.run();
  }

  /**
   * Resolves once the first list is held and the watch after it is open. Rejects with the failure when the
   * apiserver refused the cache for good before that (`FORBIDDEN`, say); the cache still tries again.
   */
  synced(): Promise<void> {
    if (this.isSyncedNow) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.add({ resolve, reject }));
  }

  /** Whether the first list is held and the watch after it was open: {@link WatchCache.list} answers. */
  isSynced(): boolean {
    return this.isSyncedNow;
  }

  /** The last resourceVersion this cache saw: of its list, of an event or of a bookmark. */
  resourceVersion(): string | undefined {
    return this.lastVersion;
  }

  /**
   * The cached objects that match `labelSelector`, as this cache last saw them (do not change them); `undefined`
   * until synced, or for a selector this cache cannot answer (set-based, or wider than its own).
   */
  list(labelSelector?: string): T[] | undefined {
    if (!this.isSyncedNow) return undefined;
    const key = labelSelector ?? '';
    const kept = this.answers.get(key);
    if (kept?.changes === this.changes) {
      // the most recently asked last, so the oldest is forgotten first
      this.answers.delete(key);
      this.answers.set(key, kept);
      return [...kept.objects];
    }
    const requirements = parseLabelSelector(key);
    if (!requirements || !isWithinSelector(requirements, this.selector)) return undefined;
    const objects = [...this.objects.values()].filter((object) =>
      matchesLabels(requirements, object.metadata.labels),
    );
    this.answers.delete(key);
    if (this.answers.size >= maxKeptAnswers) this.answers.delete(this.answers.keys().next().value as string);
    this.answers.set(key, { changes: this.changes, objects });
    return [...objects];
  }

  /** One cached object by name, as this cache last saw it (do not change it); `undefined` when it holds none. */
  get(name: string): T | undefined {
    return this.objects.get(name);
  }

  /**
   * One cached object by name, when this cache is synced and has seen resourceVersion `since` or later, so it shows
   * every change to what it caches made before `since` (a watch delivers in order); `undefined` otherwise. The
   * object is `undefined` when the cache holds none of that name.
   */
  getSeenSince(name: string, since: string): { object: T | undefined } | undefined {
    if (!this.isSyncedNow || isNewerVersion(since, this.lastVersion)) return undefined;
    return { object: this.objects.get(name) };
  }

  /**
   * {@link WatchCache.list}, but only when this cache has seen resourceVersion `since` or later, so the answer shows
   * every change made before `since`; `undefined` otherwise.
   */
  listSeenSince(labelSelector: string | undefined, since: string): T[] | undefined {
    if (isNewerVersion(since, this.lastVersion)) return undefined;
    return this.list(labelSelector);
  }

  /**
   * Resolves once this synced cache has seen resourceVersion `since` or a later one (an event or a bookmark), or
   * after `waitMs`, whichever is first; {@link WatchCache.listSeenSince} then tells which. At once when not synced.
   */
  async seen(since: string, waitMs: number): Promise<void> {
    if (!this.isSyncedNow || !isNewerVersion(since, this.lastVersion)) return;
    const waiting = this.versionWaiters.get(since) ?? new Set();
    this.versionWaiters.set(since, waiting);
    // a real timer, not the restart backoff's sleep: this bounds a wait for an event on its way
    await new Promise<void>((resolve) => {
      const end = () => {
        clearTimeout(timer);
        waiting.delete(end);
        if (waiting.size === 0 && this.versionWaiters.get(since) === waiting)
          this.versionWaiters.delete(since);
        resolve();
      };
      const timer = setTimeout(end, waitMs);
      waiting.add(end);
    });
  }

  /** Calls `listener` with every change from now on; returns what removes it. */
  onChange(listener: (change: CacheChange<T>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Takes an object as this process just wrote it, when it is one this cache holds and newer than its copy. */
  offer(object: T): void {
    if (matchesLabels(this.selector, object.metadata.labels)) this.keep(object);
  }

  /** Drops an object this process just deleted, if the cache still holds that one (`uid`). */
  forget(name: string, uid: string | undefined): void {
    const known = this.objects.get(name);
    if (known && (uid === undefined || known.metadata.uid === uid)) this.drop(known);
  }

  /** Stops the watch; the cache keeps what it holds but is no longer kept up. */
  stop(): void {
    this.stopping.abort();
    this.isSyncedNow = false;
  }

  private emit(change: CacheChange<T>): void {
    for (const listener of this.listeners) listener(change);
  }

  private keep(object: T): void {
    const { name = '', uid, resourceVersion } = object.metadata;
    if (uid !== undefined && this.buried.has(uid)) return;
    const known = this.objects.get(name);
    // resourceVersions grow across the cluster, so this also orders a new object after the one it replaced
    if (known && !isNewerVersion(resourceVersion, known.metadata.resourceVersion)) return;
    const kept = this.source.transform(object);
    this.objects.set(name, kept);
    this.changes += 1;
    this.emit({ type: known ? 'modified' : 'added', object: kept });
  }

  private drop(object: T): void {
    const { name = '', uid } = object.metadata;
    if (uid !== undefined) {
      this.buried.add(uid);
      if (this.buried.size > maxTombstones) this.buried.delete(this.buried.values().next().value as string);
    }
    const known = this.objects.get(name);
    if (!known || known.metadata.uid !== uid) return;
    this.objects.delete(name);
    this.changes += 1;
    this.emit({ type: 'deleted', object: known });
  }

  private async relist(): Promise<void> {
    const listed = await this.source.list();
    const seen = new Set<string>();
    for (const object of listed.items) {
      seen.add(object.metadata.name ?? '');
      this.keep(object);
    }
    // gone since, unless this process wrote it after the list was served
    for (const object of [...this.objects.values()]) {
      if (seen.has(object.metadata.name ?? '')) continue;
      if (isNewerVersion(object.metadata.resourceVersion, listed.resourceVersion)) continue;
      this.drop(object);
    }
    this.lastVersion = listed.resourceVersion;
    this.endSeenWaits();
    this.listedAtMs = this.options.clock.now().getTime();
    this.owesList = false;
  }

  private handle(event: WatchEvent, ended: { expired: boolean; failed: VdiError | undefined }): void {
    const object = event.object as T & { code?: number; message?: string };
    if (event.type === 'ERROR') {
      if (object.code === 410) ended.expired = true;
      else
        ended.failed = new VdiError(
          'CLUSTER_UNAVAILABLE',
          `The watch of ${this.source.describe} broke off: ${object.message ?? 'no reason given'}.`,
          { retryable: true },
        );
      return;
    }
    this.lastVersion = object.metadata?.resourceVersion ?? this.lastVersion;
    this.endSeenWaits();
    if (event.type === 'ADDED' || event.type === 'MODIFIED') this.keep(object);
    else if (event.type === 'DELETED') this.drop(object);
  }

  private async round(): Promise<WatchEnd> {
    if (this.owesList) await this.relist();
    // stopped while the list was in flight: a watch opened now would hold the process open until it times out
    if (this.stopping.signal.aborted) return 'closed';
    const ended = { expired: false, failed: undefined as VdiError | undefined };
    const watch = await this.source.watch(
      this.lastVersion ?? '',
      (event) => this.handle(event, ended),
      this.stopping.signal,
    );
    this.markSynced();
    await watch.ended;
    if (ended.failed) throw ended.failed;
    return ended.expired ? 'expired' : 'closed';
  }

  private endSeenWaits(): void {
    for (const [since, waiting] of this.versionWaiters) {
      if (isNewerVersion(since, this.lastVersion)) continue;
      for (const end of [...waiting]) end();
    }
  }

  private markSynced(): void {
    if (this.isSyncedNow || this.stopping.signal.aborted) return;
    this.isSyncedNow = true;
    this.failure = undefined;
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters.clear();
  }

  private noteFailure(error: VdiError): void {
    this.options.onFailure(error);
    if (this.isSyncedNow || error.retryable) return;
    this.failure = error;
    for (const waiter of this.waiters) waiter.reject(error);
    this.waiters.clear();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      let end: WatchEnd;
      try {
        end = await this.round();
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        const failure = isVdiError(error)
          ? error
          : toVdiError(error, `keep the cache of ${this.source.describe}`);
        this.noteFailure(failure);
        end = 'failed';
      }
      const plan = planWatchRestart({
        end,
        failures,
        listedAtMs: this.listedAtMs,
        nowMs: this.options.clock.now().getTime(),
        resyncMs: this.options.resyncMs,
      });
      failures = plan.failures;
      // a list that failed stays owed
      this.owesList ||= plan.relist;
      if (plan.waitMs > 0) await this.options.sleep(plan.waitMs, this.stopping.signal).catch(() => {});
    }
  }
}
