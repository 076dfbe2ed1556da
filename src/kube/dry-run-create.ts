import { ApiException } from '@kubernetes/client-node';
import { isVdiError } from '../errors.js';
import type { PersistentVolumeClaimObject, PodObject, ServiceObject } from '../kube-objects.js';
import type { KubeCluster } from './cluster.js';
import { isConflictReason } from './errors.js';
import { podKind, pvcKind, serviceKind } from './resource-kinds.js';

/** One field of an object the apiserver refused, as its Status names it in `details.causes`. */
export interface RefusedField {
  /** The object's field, such as `spec.containers[0].image`; empty when the apiserver named none. */
  field: string;
  message: string;
}

/** What a dry-run create found: the apiserver accepts the object, or refuses these fields of it. */
export type DryRunResult = { kind: 'accepted' } | { kind: 'refused'; fields: RefusedField[] };

interface DryRunKinds {
  Pod: PodObject;
  Service: ServiceObject;
  PersistentVolumeClaim: PersistentVolumeClaimObject;
}

function refusedFieldsOf(error: unknown): RefusedField[] {
  if (!(error instanceof ApiException)) return [];
  let status: { message?: string; details?: { causes?: Array<{ field?: string; message?: string }> } };
  try {
    status = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
  } catch {
    return [{ field: '', message: String(error.body).slice(0, 300) }];
  }
  const causes = status?.details?.causes ?? [];
  if (causes.length === 0) return [{ field: '', message: status?.message ?? `HTTP ${error.code}` }];
  return causes.map((cause) => ({ field: cause.field ?? '', message: cause.message ?? '' }));
}

/**
 * Creates `object` as a server-side dry run (`dryRun=All`): the apiserver decodes, defaults, validates and admits
 * it as for a create, authorizes it as a create, and stores nothing. A refusal of the object (422 or 400) is a
 * result, with the fields the apiserver named; an object of the same name already there is no refusal of it; any
 * other failure throws.
 *
 * @throws `VdiError` as every apiserver call: `FORBIDDEN` without `create` on the kind, `NOT_FOUND`, ….
 */
export async function dryRunCreate<K extends keyof DryRunKinds>(
  cluster: KubeCluster,
  kind: K,
  namespace: string,
  object: DryRunKinds[K],
): Promise<DryRunResult> {
  const create: () => Promise<unknown> = {
    Pod: () =>
      cluster
        .resource(podKind)
        .in(namespace)
        .create(object as PodObject, { dryRun: true }),
    Service: () =>
      cluster
        .resource(serviceKind)
        .in(namespace)
        .create(object as ServiceObject, { dryRun: true }),
    PersistentVolumeClaim: () =>
      cluster
        .resource(pvcKind)
        .in(namespace)
        .create(object as PersistentVolumeClaimObject, { dryRun: true }),
  }[kind];
  try {
    await create();
    return { kind: 'accepted' };
  } catch (error) {
    // the apiserver finds the name taken only after it validated and admitted the object
    if (isConflictReason(error, 'AlreadyExists')) return { kind: 'accepted' };
    if (!isVdiError(error, 'INVALID_INPUT')) throw error;
    return { kind: 'refused', fields: refusedFieldsOf(error.cause) };
  }
}
