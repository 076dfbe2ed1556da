import {
  ApiException,
  type ConfigurationOptions,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';

/** Request options that make a client-node patch a JSON merge patch (its default is a JSON patch). */
export const mergePatch: ConfigurationOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The HTTP status of a failed apiserver call, or undefined when the error is not an apiserver answer. */
export function httpStatusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The object a call returns, or undefined when the apiserver answered 404. */
export async function unlessNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (httpStatusOf(error) === 404) return undefined;
    throw error;
  }
}

/** Whether a resourceVersion is newer than another; etcd's are integers, anything else counts as newer. */
export function isNewerVersion(candidate: string | undefined, than: string | undefined): boolean {
  if (candidate === undefined || than === undefined) return true;
  if (!/^[0-9]+$/.test(candidate) || !/^[0-9]+$/.test(than)) return candidate !== than;
  return BigInt(candidate) > BigInt(than);
}

/** Waits `ms` milliseconds, or less when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Creates the namespace `name`, or leaves it when it exists. */
export async function ensureNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  try {
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (error) {
    if (httpStatusOf(error) !== 409) throw error;
  }
}
