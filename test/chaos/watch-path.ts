import { type KubeConfig, Watch } from '@kubernetes/client-node';

/** An object as a watch delivers it: only the metadata every kind has is typed. */
export interface WatchedObject {
  metadata?: { name?: string; resourceVersion?: string; uid?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** A watch that keeps going until stopped. */
export interface RunningWatch {
  /** Resolves once the first watch request has been answered, so no later change can be missed. */
  ready: Promise<void>;
  stop(): void;
}

/**
 * Watches a collection path from now on and calls `onEvent` for every change, picking up where it left off
 * (by resourceVersion) whenever the watch ends, until stopped. `onError` hears of a watch that could not go on,
 * such as one whose version the apiserver no longer has: the record then has a gap.
 */
export function watchPath(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string>,
  onEvent: (type: string, object: WatchedObject) => void,
  onError: (error: unknown) => void,
): RunningWatch {
  const watch = new Watch(kubeConfig);
  let stopped = false;
  let current: AbortController | undefined;
  let resourceVersion: string | undefined;
  const begin = async (): Promise<void> => {
    current = await watch.watch(
      path,
      { ...query, ...(resourceVersion === undefined ? {} : { resourceVersion }), allowWatchBookmarks: true },
      (type, object: WatchedObject) => {
        if (type === 'ERROR') {
          onError(new Error(`the watch of ${path} broke off: ${JSON.stringify(object)}`));
          return;
        }
        resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
        if (type !== 'BOOKMARK') onEvent(type, object);
      },
      // The apiserver or the connection ends watches now and then: go on from the last version seen.
      () => {
        if (!stopped) void begin().catch(onError);
      },
    );
  };
  return {
    ready: begin(),
    stop: () => {
      stopped = true;
      current?.abort();
    },
  };
}
