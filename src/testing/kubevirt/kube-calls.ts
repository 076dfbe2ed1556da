import {
  ApiException,
  type ConfigurationOptions,
  CoreV1Api,
  type CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { CachedObject, Informer, ResourceRef } from './informer.js';

/** Where KubeVirt's resources live, as client-node's custom-object calls take them. */
export const kubevirtResources = {
  vm: { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' },
  vmi: { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachineinstances' },
  kubevirt: { group: 'kubevirt.io', version: 'v1', plural: 'kubevirts' },
  clone: { group: 'clone.kubevirt.io', version: 'v1beta1', plural: 'virtualmachineclones' },
} as const;

/** The namespace and name of a `namespace/name` key. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

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

/**
 * Creates an object, or replaces the existing one (keeping its resourceVersion as the precondition), reading it
 * again when another writer got there first.
 */
export async function upsert<T extends { metadata?: { resourceVersion?: string } }>(
  read: () => Promise<T>,
  create: () => Promise<unknown>,
  replace: (existing: T, resourceVersion: string | undefined) => Promise<unknown>,
): Promise<void> {
  for (;;) {
    const existing = await unlessNotFound(read());
    try {
      if (existing === undefined) await create();
      else await replace(existing, existing.metadata?.resourceVersion);
      return;
    } catch (error) {
      if (httpStatusOf(error) !== 409) throw error;
    }
  }
}

/**
 * Merge-patches the status of a namespaced custom object, conditioned on the resourceVersion `object` was read
 * at, and caches what the apiserver returns. A VMI's status is patched on the object itself, as KubeVirt's VMI
 * CRD has no status subresource. When someone else wrote first (409) or the object is gone (404) it
 * caches a fresh read instead and returns false, so the caller decides again.
 */
export async function writeStatus<T extends CachedObject>(
  api: CustomObjectsApi,
  informer: Informer<T>,
  resource: ResourceRef,
  object: T,
  status: Record<string, unknown>,
): Promise<boolean> {
  const ref = { ...resource, namespace: object.metadata.namespace ?? '', name: object.metadata.name ?? '' };
  try {
    const body = { metadata: { resourceVersion: object.metadata.resourceVersion }, status };
    const patch =
      resource.plural === kubevirtResources.vmi.plural
        ? api.patchNamespacedCustomObject({ ...ref, body }, mergePatch)
        : api.patchNamespacedCustomObjectStatus({ ...ref, body }, mergePatch);
    informer.remember((await patch) as T);
    return true;
  } catch (error) {
    if (httpStatusOf(error) !== 409 && httpStatusOf(error) !== 404) throw error;
    const fresh = (await unlessNotFound(api.getNamespacedCustomObject(ref))) as T | undefined;
    if (fresh) informer.remember(fresh);
    else informer.forget(`${ref.namespace}/${ref.name}`, undefined);
    return false;
  }
}

/** Creates the namespace `name`, or leaves it when it exists. */
export async function ensureNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  try {
    await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (error) {
    if (httpStatusOf(error) !== 409) throw error;
  }
}
