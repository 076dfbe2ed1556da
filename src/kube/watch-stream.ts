import {
  ApiException,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
} from '@kubernetes/client-node';
import { shareConnections } from './connections.js';

const httpLibrary = new IsomorphicFetchHttpLibrary();

/** One line of a watch: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`, and its object. */
export interface WatchEvent {
  type: string;
  object: unknown;
}

/** A watch the apiserver accepted: `ended` settles when its stream ends (rejects when it broke). */
export interface OpenWatch {
  ended: Promise<void>;
}

/** What a watch tells its reader while it runs. */
export interface WatchListener {
  onEvent(event: WatchEvent): void;
  /** The size of each chunk of the stream as it arrives. */
  onBytes(bytes: number): void;
}

/**
 * Opens a watch of a collection path (the query must hold `watch=true`) and resolves once the apiserver accepted
 * it, with `ended`, which settles when the stream ends: when the apiserver closes it at `timeoutSeconds`, when
 * `signal` aborts, or when nothing arrived for `silentMs` (a connection that died without a reset). A refusal
 * throws an `ApiException` with the apiserver's `Status`, as client-node's calls do, so it translates alike.
 */
export async function openWatchStream(
  kubeConfig: KubeConfig,
  pathAndQuery: string,
  listener: WatchListener,
  options: { signal: AbortSignal; silentMs: number },
): Promise<OpenWatch> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  // stopped before it opened: no request, the watch has ended
  if (options.signal.aborted) return { ended: Promise.resolve() };
  const stopping = new AbortController();
  const stop = () => stopping.abort();
  options.signal.addEventListener('abort', stop, { once: true });
  const context = new RequestContext(new URL(pathAndQuery, cluster.server).toString(), HttpMethod.GET);
  context.setHeaderParam('Accept', 'application/json');
  context.setHeaderParam('User-Agent', 'corral-vdi');
  await kubeConfig.applySecurityAuthentication(context);
  context.setSignal(stopping.signal);
  const response = await httpLibrary
    .send(await shareConnections(kubeConfig, context))
    .toPromise()
    .catch((error: unknown) => {
      options.signal.removeEventListener('abort', stop);
      throw error;
    });
  if (response.httpStatusCode !== 200) {
    options.signal.removeEventListener('abort', stop);
    const text = await response.body.text();
    throw new ApiException(
      response.httpStatusCode,
      `HTTP ${response.httpStatusCode}`,
      text,
      response.headers,
    );
  }
  const stream = response.body.stream() as ReadableStream<Uint8Array> | null;
  const ended = readLines(stream, listener, options.silentMs, stopping).finally(() => {
    options.signal.removeEventListener('abort', stop);
  });
  return { ended };
}

async function readLines(
  stream: ReadableStream<Uint8Array> | null,
  listener: WatchListener,
  silentMs: number,
  stopping: AbortController,
): Promise<void> {
  if (!stream) return;
  const decoder = new TextDecoder();
  let pending = '';
  let silence: ReturnType<typeof setTimeout> | undefined;
  const listen = () => {
    clearTimeout(silence);
    silence = setTimeout(() => stopping.abort(), silentMs);
    silence.unref();
  };
  listen();
  try {
    for await (const chunk of stream) {
      listen();
      listener.onBytes(chunk.byteLength);
      pending += decoder.decode(chunk, { stream: true });
      let end = pending.indexOf('\n');
      while (end >= 0) {
        const line = pending.slice(0, end).trim();
        pending = pending.slice(end + 1);
        if (line !== '') listener.onEvent(JSON.parse(line) as WatchEvent);
        end = pending.indexOf('\n');
      }
    }
  } catch (error) {
    // our own abort (stopped, or silent too long) ends the watch like a close; anything else is a failure
    if (!stopping.signal.aborted) throw error;
  } finally {
    clearTimeout(silence);
  }
}
