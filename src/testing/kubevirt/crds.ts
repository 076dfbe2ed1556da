import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import { unlessNotFound, upsert } from './kube-calls.js';
import kubevirtCrdData from './kubevirt-crds.json' with { type: 'json' };
import { pause } from './pause.js';

/** The KubeVirt release whose CustomResourceDefinitions the simulator installs. @category testing */
export const kubevirtRelease: string = kubevirtCrdData.kubevirtRelease;

/** A CustomResourceDefinition as plain JSON, spelled exactly as the apiserver reads it. */
type CrdBody = { metadata: { name: string; resourceVersion?: string } } & Record<string, unknown>;

/**
 * KubeVirt's own CustomResourceDefinitions of the kinds the SDK and the simulator use, as {@link kubevirtRelease}
 * installs them: every version carries the CRD's schema.
 */
export const kubevirtCrds: readonly CrdBody[] = kubevirtCrdData.crds.map(
  ({ definition, openAPIV3Schema }) => ({
    ...definition,
    metadata: {
      ...definition.metadata,
      labels: { ...definition.metadata.labels, 'app.kubernetes.io/managed-by': 'corral-vdi-simulator' },
    },
    spec: {
      ...definition.spec,
      versions: definition.spec.versions.map((version) => ({ ...version, schema: { openAPIV3Schema } })),
    },
  }),
);

// KubeVirt v1.4 and earlier served clone.kubevirt.io in v1alpha1 alone, with the spec v1beta1 kept.
function withCloneVersion(crd: CrdBody, cloneVersion: 'v1beta1' | 'v1alpha1'): CrdBody {
  if (cloneVersion === 'v1beta1' || crd.metadata.name !== 'virtualmachineclones.clone.kubevirt.io')
    return crd;
  const spec = crd.spec as { versions: { name: string }[] };
  const versions = spec.versions
    .filter((version) => version.name === 'v1alpha1')
    .map((version) => ({ ...version, served: true, storage: true }));
  return { ...crd, spec: { ...spec, versions } };
}

// The custom-object client sends bodies as they are; the typed CRD client would rename the schemas' extensions.
const crdResource = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
} as const;

function isEstablished(crd: unknown): boolean {
  const conditions = (crd as { status?: { conditions?: { type: string; status: string }[] } } | undefined)
    ?.status?.conditions;
  return (
    conditions?.some((condition) => condition.type === 'Established' && condition.status === 'True') ?? false
  );
}

/**
 * Creates KubeVirt's CustomResourceDefinitions, schemas included, as the KubeVirt release the package carries
 * (v1.9.0) installs them, or brings existing ones up to date, and waits until the apiserver serves them. Safe to
 * call again. `cloneVersion: 'v1alpha1'` serves `clone.kubevirt.io` in `v1alpha1` alone, as KubeVirt v1.4 and
 * earlier; the default serves both, `v1beta1` stored.
 *
 * @throws `VdiError` `CONTROL_PLANE_FAILED` when a definition is not established within 30 seconds.
 * @category testing
 */
export async function installKubevirtCrds(
  kubeConfig: KubeConfig,
  options: { cloneVersion?: 'v1beta1' | 'v1alpha1' } = {},
): Promise<void> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  await Promise.all(
    kubevirtCrds.map(async (crd) => {
      const body = withCloneVersion(crd, options.cloneVersion ?? 'v1beta1');
      const { name } = body.metadata;
      await upsert(
        () => api.getClusterCustomObject({ ...crdResource, name }) as Promise<CrdBody>,
        () => api.createClusterCustomObject({ ...crdResource, body }),
        (_, resourceVersion) =>
          api.replaceClusterCustomObject({
            ...crdResource,
            name,
            body: { ...body, metadata: { ...body.metadata, resourceVersion } },
          }),
      );
      const deadline = Date.now() + 30_000;
      while (!isEstablished(await unlessNotFound(api.getClusterCustomObject({ ...crdResource, name })))) {
        if (Date.now() > deadline) {
          throw new VdiError(
            'CONTROL_PLANE_FAILED',
            `CustomResourceDefinition ${name} was not established within 30 s; check the apiserver log.`,
          );
        }
        await pause(50);
      }
    }),
  );
}
