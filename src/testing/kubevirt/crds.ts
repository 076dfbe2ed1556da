import {
  ApiextensionsV1Api,
  type KubeConfig,
  type V1CustomResourceColumnDefinition,
  type V1CustomResourceDefinition,
  type V1CustomResourceDefinitionVersion,
  type V1CustomResourceValidation,
} from '@kubernetes/client-node';
import { VdiError } from '../../errors.js';
import { unlessNotFound, upsert } from './kube-calls.js';
import { pause } from './pause.js';

// Real KubeVirt objects carry far more fields than the simulator reads; keep them all. (client-node's
// serializer knows the extension only by its TypeScript name.)
const openSchema: V1CustomResourceValidation = {
  openAPIV3Schema: {
    type: 'object',
    properties: {
      spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
      status: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
    },
  },
};

type Column = V1CustomResourceColumnDefinition;

const age: Column = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

function version(
  name: string,
  storage: boolean,
  columns: Column[],
  deprecated = false,
): V1CustomResourceDefinitionVersion {
  return {
    name,
    served: true,
    storage,
    ...(deprecated ? { deprecated: true } : {}),
    schema: openSchema,
    subresources: { status: {} },
    ...(columns.length > 0 ? { additionalPrinterColumns: columns } : {}),
  };
}

function definition(
  group: string,
  kind: string,
  plural: string,
  shortNames: string[],
  versions: V1CustomResourceDefinitionVersion[],
): V1CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${group}`,
      labels: { 'app.kubernetes.io/managed-by': 'corral-vdi-simulator' },
    },
    spec: {
      group,
      scope: 'Namespaced',
      names: {
        kind,
        plural,
        singular: kind.toLowerCase(),
        listKind: `${kind}List`,
        shortNames,
        categories: ['all'],
      },
      versions,
    },
  };
}

/** The CustomResourceDefinitions the simulator installs: KubeVirt's VMs, VMIs, KubeVirt CR and clones. */
export const kubevirtCrds: readonly V1CustomResourceDefinition[] = [
  definition(
    'kubevirt.io',
    'VirtualMachine',
    'virtualmachines',
    ['vm', 'vms'],
    [
      version('v1', true, [
        age,
        { name: 'Status', type: 'string', jsonPath: '.status.printableStatus' },
        { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      ]),
    ],
  ),
  definition(
    'kubevirt.io',
    'VirtualMachineInstance',
    'virtualmachineinstances',
    ['vmi', 'vmis'],
    [
      version('v1', true, [
        age,
        { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
        { name: 'IP', type: 'string', jsonPath: '.status.interfaces[0].ipAddress' },
        { name: 'NodeName', type: 'string', jsonPath: '.status.nodeName' },
      ]),
    ],
  ),
  definition('kubevirt.io', 'KubeVirt', 'kubevirts', ['kv', 'kvs'], [version('v1', true, [age])]),
  definition(
    'clone.kubevirt.io',
    'VirtualMachineClone',
    'virtualmachineclones',
    ['vmclone', 'vmclones'],
    [
      version('v1beta1', true, [age, { name: 'Phase', type: 'string', jsonPath: '.status.phase' }]),
      version('v1alpha1', false, [age, { name: 'Phase', type: 'string', jsonPath: '.status.phase' }], true),
    ],
  ),
];

function isEstablished(crd: V1CustomResourceDefinition | undefined): boolean {
  return (
    crd?.status?.conditions?.some(
      (condition) => condition.type === 'Established' && condition.status === 'True',
    ) ?? false
  );
}

/**
 * Creates KubeVirt's CustomResourceDefinitions, or brings existing ones up to date, and waits until the
 * apiserver serves them. Safe to call again.
 *
 * @throws `VdiError` `CONTROL_PLANE_FAILED` when a definition is not established within 30 seconds.
 * @category testing
 */
export async function installKubevirtCrds(kubeConfig: KubeConfig): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  await Promise.all(
    kubevirtCrds.map(async (body) => {
      const name = body.metadata?.name ?? '';
      await upsert(
        () => api.readCustomResourceDefinition({ name }),
        () => api.createCustomResourceDefinition({ body }),
        (_, resourceVersion) =>
          api.replaceCustomResourceDefinition({
            name,
            body: { ...body, metadata: { ...body.metadata, resourceVersion } },
          }),
      );
      const deadline = Date.now() + 30_000;
      while (!isEstablished(await unlessNotFound(api.readCustomResourceDefinition({ name })))) {
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
