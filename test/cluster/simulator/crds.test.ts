import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubevirtCrds, kubevirtRelease } from '../../../src/testing/kubevirt/crds.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

const crdResource = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
} as const;

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  subresources?: Record<string, unknown>;
  additionalPrinterColumns?: { name: string; jsonPath: string; priority?: number }[];
  schema: { openAPIV3Schema: Record<string, unknown> };
}

interface Crd {
  spec: { names: { shortNames: string[]; categories: string[] }; versions: CrdVersion[] };
}

async function readCrd(name: string): Promise<Crd> {
  const api = cluster().kubeConfig.makeApiClient(CustomObjectsApi);
  return (await api.getClusterCustomObject({ ...crdResource, name })) as Crd;
}

function summary(crd: Crd) {
  return {
    shortNames: crd.spec.names.shortNames,
    categories: crd.spec.names.categories,
    versions: crd.spec.versions.map((version) => ({
      name: version.name,
      served: version.served,
      storage: version.storage,
      deprecated: version.deprecated ?? false,
      subresources: Object.keys(version.subresources ?? {}),
      columns: (version.additionalPrinterColumns ?? []).map((column) => column.name),
    })),
  };
}

// Every key of a schema, at any depth, so a renamed extension cannot hide.
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) keysOf(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      into.add(key);
      keysOf(inner, into);
    }
  }
  return into;
}

async function failureOf(call: Promise<unknown>): Promise<ApiException<string>> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof ApiException)) throw new Error(`expected the apiserver to refuse, got ${error}`);
  return error as ApiException<string>;
}

describe("KubeVirt's own CRDs in the simulator", () => {
  it('are those of KubeVirt v1.9.0: its versions, storage version, subresources and printer columns', async () => {
    expect(kubevirtRelease).toBe('v1.9.0');
    const column = ['Age', 'Phase', 'IP', 'NodeName', 'Ready', 'Live-Migratable', 'Paused'];
    const coreVersions = (subresources: string[], columns: string[]) => [
      { name: 'v1', served: true, storage: true, deprecated: false, subresources, columns },
      { name: 'v1alpha3', served: true, storage: false, deprecated: true, subresources, columns },
    ];
    expect(summary(await readCrd('virtualmachines.kubevirt.io'))).toEqual({
      shortNames: ['vm', 'vms'],
      categories: ['all'],
      versions: coreVersions(['status'], ['Age', 'Status', 'Ready']),
    });
    // KubeVirt's VMI has no status subresource: its status is written with the object
    expect(summary(await readCrd('virtualmachineinstances.kubevirt.io'))).toEqual({
      shortNames: ['vmi', 'vmis'],
      categories: ['all'],
      versions: coreVersions([], column),
    });
    expect(summary(await readCrd('kubevirts.kubevirt.io'))).toEqual({
      shortNames: ['kv', 'kvs'],
      categories: ['all'],
      versions: coreVersions(['status'], ['Age', 'Phase']),
    });
    const cloneColumns = ['Phase', 'SourceVirtualMachine', 'TargetVirtualMachine'];
    expect(summary(await readCrd('virtualmachineclones.clone.kubevirt.io'))).toEqual({
      shortNames: ['vmclone', 'vmclones'],
      categories: ['all'],
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: false,
          deprecated: false,
          subresources: ['status'],
          columns: cloneColumns,
        },
        {
          name: 'v1beta1',
          served: true,
          storage: true,
          deprecated: false,
          subresources: ['status'],
          columns: cloneColumns,
        },
      ],
    });
  });

  it('reach the apiserver with the schemas exactly as KubeVirt ships them, extensions spelled as KubeVirt spells them', async () => {
    for (const sent of kubevirtCrds) {
      const stored = await readCrd(sent.metadata.name);
      const sentVersions = (sent.spec as { versions: CrdVersion[] }).versions;
      expect(stored.spec.versions.map((version) => version.schema)).toEqual(
        sentVersions.map((version) => version.schema),
      );
      const keys = keysOf(stored.spec.versions[0]?.schema);
      expect([...keys].filter((key) => key.startsWith('x_'))).toEqual([]);
    }
    const vm = (await readCrd('virtualmachines.kubevirt.io')).spec.versions[0]?.schema.openAPIV3Schema as {
      properties: Record<string, Record<string, unknown>>;
    };
    // the open schema this replaced kept every unknown field of spec and status
    expect(vm.properties.spec?.['x-kubernetes-preserve-unknown-fields']).toBeUndefined();
    expect(vm.properties.status?.['x-kubernetes-preserve-unknown-fields']).toBeUndefined();
    expect(keysOf(vm)).toContain('x-kubernetes-preserve-unknown-fields');
  });

  it('let every authenticated user list the KubeVirt CR, as KubeVirt’s install does', async () => {
    const stranger = cluster().userKubeConfig('bound-to-nothing').makeApiClient(CustomObjectsApi);
    const listed = await stranger.listClusterCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'kubevirts',
    });
    expect(listed).toMatchObject({ kind: 'KubeVirtList' });
  });

  it('prune a misspelled field of a VM, as a real cluster does', async () => {
    const namespace = await createTestNamespace(cluster(), 'crd-prune');
    const objects = kubevirtObjects(cluster().kubeConfig, namespace);
    const vm = sampleVm('desk');
    Object.assign(vm.spec, { runStrategyy: 'Always' });
    Object.assign(vm.spec.template?.spec?.domain ?? {}, { cpuu: { cores: 2 } });
    await objects.createVm(vm);

    const stored = await objects.getVm('desk');
    expect(stored?.spec).not.toHaveProperty('runStrategyy');
    expect(stored?.spec.template?.spec?.domain).not.toHaveProperty('cpuu');
    expect(stored?.spec.runStrategy).toBe('Halted');
    expect(stored?.spec.template?.spec?.domain?.devices?.gpus).toEqual([
      { name: 'gpu1', deviceName: 'nvidia.com/A10' },
    ]);
  });

  it("refuse a VM with a wrong-typed field with the apiserver's 422", async () => {
    const namespace = await createTestNamespace(cluster(), 'crd-types');
    const objects = kubevirtObjects(cluster().kubeConfig, namespace);
    const vm = sampleVm('desk');
    Object.assign(vm.spec.template?.spec?.domain?.devices ?? {}, { autoattachGraphicsDevice: 'no' });

    const refused = await failureOf(objects.createVm(vm));
    expect(refused.code).toBe(422);
    // the schema's CEL rules are skipped once a type is wrong, and the apiserver says so
    expect(JSON.parse(refused.body).message).toBe(
      'VirtualMachine.kubevirt.io "desk" is invalid: [spec.template.spec.domain.devices.autoattachGraphicsDevice: ' +
        'Invalid value: "string": spec.template.spec.domain.devices.autoattachGraphicsDevice in body must be of type boolean: "string", ' +
        '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; ' +
        'correct the existing errors to complete validation]',
    );
    expect(await objects.getVm('desk')).toBeUndefined();
  });
});
