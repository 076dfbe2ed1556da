import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  type V1ConfigMap,
  type V1CustomResourceDefinition,
  type V1Service,
  type V1ServiceAccount,
} from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import type { KubevirtBinaries } from '../binaries.js';
import {
  ensureNamespace,
  httpStatusOf,
  kubevirtResources,
  mergePatch,
  upsert,
} from '../kubevirt/kube-calls.js';
import { kubevirtCrRef } from '../kubevirt/nodes.js';
import { waitFor } from '../wait-for.js';

/** The namespace KubeVirt's programs run in, as its operator installs them. */
export const kubevirtNamespace = kubevirtCrRef.namespace;

/** The service accounts the two programs run as, from KubeVirt's RBAC. */
export const serviceAccounts = {
  api: 'kubevirt-apiserver',
  controller: 'kubevirt-controller',
} as const;

/** Where `kubevirt-install` wrote each certificate pair: `<dir>/<secret name>/tls.{crt,key}`. */
export interface KubevirtCertificates {
  caPem: string;
  /** virt-api's serving pair, for `virt-api.kubevirt.svc`. */
  api: CertificatePair;
  /** virt-controller's metrics pair. */
  controller: CertificatePair;
  /** The client pair virt-api presents to a node's handler. */
  handlerClient: CertificatePair;
  /** The serving pair of a node's handler, which virt-api checks against the CA. */
  handlerServer: CertificatePair;
}

/** A certificate and its key, as files and as PEM. */
export interface CertificatePair {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

interface InstallDocument {
  version: string;
  namespace: string;
  objects: KubernetesObject[];
}

const run = promisify(execFile);

function pairIn(dir: string, secretName: string): CertificatePair {
  const certPath = join(dir, secretName, 'tls.crt');
  const keyPath = join(dir, secretName, 'tls.key');
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, 'utf8'),
    keyPem: readFileSync(keyPath, 'utf8'),
  };
}

/** Runs virt-operator's install code (the `kubevirt-install` command) into `dir`: the objects and fresh certificates. */
export async function generateInstall(
  binaries: KubevirtBinaries,
  dir: string,
): Promise<{ objects: KubernetesObject[]; certificates: KubevirtCertificates }> {
  try {
    await run(binaries.kubevirtInstall, [
      `--namespace=${kubevirtNamespace}`,
      `--version=${binaries.version}`,
      `--out=${dir}`,
    ]);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new VdiError('CONTROL_PLANE_FAILED', `kubevirt-install failed: ${stderr.trim()}`);
  }
  const document = JSON.parse(readFileSync(join(dir, 'install.json'), 'utf8')) as InstallDocument;
  const ca = pairIn(dir, 'kubevirt-ca');
  return {
    objects: document.objects,
    certificates: {
      caPem: ca.certPem,
      api: pairIn(dir, 'kubevirt-virt-api-certs'),
      controller: pairIn(dir, 'kubevirt-controller-certs'),
      handlerClient: pairIn(dir, 'kubevirt-virt-handler-certs'),
      handlerServer: pairIn(dir, 'kubevirt-virt-handler-server-certs'),
    },
  };
}

type WebhookConfiguration = KubernetesObject & {
  webhooks?: { clientConfig?: { service?: { port?: number } } }[];
};
type ApiService = KubernetesObject & { spec?: { service?: { port?: number } } };

/** The install objects with every webhook and APIService pointed at virt-api's local port. */
function pointedAt(objects: KubernetesObject[], apiPort: number): KubernetesObject[] {
  return objects.map((object) => {
    if (object.kind === 'ValidatingWebhookConfiguration' || object.kind === 'MutatingWebhookConfiguration') {
      const configuration = object as WebhookConfiguration;
      return {
        ...configuration,
        webhooks: configuration.webhooks?.map((webhook) => ({
          ...webhook,
          clientConfig: {
            ...webhook.clientConfig,
            service: { ...webhook.clientConfig?.service, port: apiPort },
          },
        })),
      } as KubernetesObject;
    }
    if (object.kind === 'APIService') {
      const service = object as ApiService;
      return { ...service, spec: { ...service.spec, service: { ...service.spec?.service, port: apiPort } } };
    }
    return object;
  });
}

/** The plural of a kind as the apiserver names its resource (`ValidatingAdmissionPolicy` → `validatingadmissionpolicies`). */
function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  return lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s`;
}

/**
 * Creates an object of the install, or replaces the one there. Objects of API groups go through the custom-object
 * calls, which send them as they are: client-node's typed models would drop fields they do not name (a CRD
 * schema's `x-kubernetes-int-or-string`, for one).
 */
async function apply(kubeConfig: KubeConfig, object: KubernetesObject): Promise<void> {
  const { creationTimestamp: _, ...rest } = object.metadata ?? {};
  const name = rest.name ?? '';
  const namespace = rest.namespace;
  const body = { ...object, metadata: rest };
  const withVersion = (resourceVersion: string | undefined) => ({
    ...body,
    metadata: { ...rest, resourceVersion },
  });
  const [group, version] = (object.apiVersion ?? '').split('/');
  if (version === undefined) {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const ns = namespace ?? kubevirtNamespace;
    if (object.kind === 'ServiceAccount') {
      return await upsert(
        () => core.readNamespacedServiceAccount({ name, namespace: ns }),
        () => core.createNamespacedServiceAccount({ namespace: ns, body: body as V1ServiceAccount }),
        (_e, rv) =>
          core.replaceNamespacedServiceAccount({
            name,
            namespace: ns,
            body: withVersion(rv) as V1ServiceAccount,
          }),
      );
    }
    if (object.kind === 'Service') {
      return await upsert(
        () => core.readNamespacedService({ name, namespace: ns }),
        () => core.createNamespacedService({ namespace: ns, body: body as V1Service }),
        (_e, rv) =>
          core.replaceNamespacedService({ name, namespace: ns, body: withVersion(rv) as V1Service }),
      );
    }
    if (object.kind === 'ConfigMap') {
      return await upsert(
        () => core.readNamespacedConfigMap({ name, namespace: ns }),
        () => core.createNamespacedConfigMap({ namespace: ns, body: body as V1ConfigMap }),
        (_e, rv) =>
          core.replaceNamespacedConfigMap({ name, namespace: ns, body: withVersion(rv) as V1ConfigMap }),
      );
    }
    throw new VdiError(
      'CONTROL_PLANE_FAILED',
      `kubevirt-install wrote a core ${object.kind}, which this install does not know.`,
    );
  }
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const ref = { group: group ?? '', version, plural: pluralOf(object.kind ?? ''), name };
  if (namespace === undefined) {
    return await upsert(
      () => custom.getClusterCustomObject(ref) as Promise<KubernetesObject>,
      () => custom.createClusterCustomObject({ ...ref, body }),
      (_e, rv) => custom.replaceClusterCustomObject({ ...ref, body: withVersion(rv) }),
    );
  }
  await upsert(
    () => custom.getNamespacedCustomObject({ ...ref, namespace }) as Promise<KubernetesObject>,
    () => custom.createNamespacedCustomObject({ ...ref, namespace, body }),
    (_e, rv) => custom.replaceNamespacedCustomObject({ ...ref, namespace, body: withVersion(rv) }),
  );
}

async function waitUntilEstablished(kubeConfig: KubeConfig, names: string[]): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const established = (crd: V1CustomResourceDefinition) =>
    crd.status?.conditions?.some(
      (condition) => condition.type === 'Established' && condition.status === 'True',
    );
  for (const name of names) {
    await waitFor(() => api.readCustomResourceDefinition({ name }), {
      describe: `the CRD ${name} to be established`,
      until: (crd) => established(crd) === true,
      timeoutMs: 30_000,
    });
  }
}

/**
 * Installs what virt-operator would for virt-api and virt-controller, as `kubevirt-install` generated it: the
 * CRDs, RBAC, webhooks, APIServices and admission policies, an `ExternalName` Service `kubevirt/virt-api` to
 * localhost, the CA bundle virt-api watches, and the KubeVirt CR with the status virt-operator writes once it
 * deployed (`Deployed`, `amd64`), which both programs wait for.
 */
export async function installKubevirt(
  kubeConfig: KubeConfig,
  objects: KubernetesObject[],
  certificates: KubevirtCertificates,
  apiPort: number,
): Promise<void> {
  await ensureNamespace(kubeConfig, kubevirtNamespace);
  const crds = objects.filter((object) => object.kind === 'CustomResourceDefinition');
  for (const crd of crds) await apply(kubeConfig, crd);
  await waitUntilEstablished(
    kubeConfig,
    crds.map((crd) => crd.metadata?.name ?? ''),
  );
  for (const object of pointedAt(objects, apiPort)) {
    if (object.kind !== 'CustomResourceDefinition') await apply(kubeConfig, object);
  }
  // Endpoints cannot point into 127.0.0.0/8; an ExternalName service to localhost can.
  await apply(kubeConfig, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'virt-api', namespace: kubevirtNamespace },
    spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port: apiPort }] },
  } as KubernetesObject);
  await apply(kubeConfig, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kubevirt-ca', namespace: kubevirtNamespace },
    data: { 'ca-bundle': certificates.caPem },
  } as KubernetesObject);
  await markDeployed(kubeConfig);
}

async function markDeployed(kubeConfig: KubeConfig): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const ref = { ...kubevirtResources.kubevirt, ...kubevirtCrRef };
  try {
    await custom.createNamespacedCustomObject({
      ...ref,
      body: {
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: ref.name, namespace: ref.namespace },
        // the pools' clones need Snapshot, a beta gate: 1.9 turns it on by default, 1.6 only when listed
        spec: { configuration: { developerConfiguration: { featureGates: ['Snapshot'] } } },
      },
    });
  } catch (error) {
    if (httpStatusOf(error) !== 409) throw error;
  }
  await custom.patchNamespacedCustomObjectStatus(
    { ...ref, body: { status: { phase: 'Deployed', defaultArchitecture: 'amd64' } } },
    mergePatch,
  );
}

/** A kubeconfig for a KubeVirt service account, with a token of its own from the TokenRequest API. */
export async function serviceAccountKubeconfig(
  kubeConfig: KubeConfig,
  account: string,
  server: string,
  caPem: string,
): Promise<string> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const { status } = await core.createNamespacedServiceAccountToken({
    name: account,
    namespace: kubevirtNamespace,
    // a week: a test bed runs for minutes, a benchmark for an hour at most
    body: { spec: { audiences: [], expirationSeconds: 7 * 24 * 3600 } },
  });
  const base64 = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: local\n  cluster:\n    server: ${server}\n    certificate-authority-data: ${base64}`,
    'users:',
    `- name: ${account}\n  user:\n    token: ${status?.token ?? ''}`,
    'contexts:',
    `- name: local\n  context:\n    cluster: local\n    user: ${account}\n    namespace: ${kubevirtNamespace}`,
    'current-context: local',
    '',
  ].join('\n');
}
