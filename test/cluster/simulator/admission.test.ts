import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { VirtualMachine, VirtualMachineClone } from '../../../src/kubevirt-types.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { kubevirtObjects, sampleVm } from './simulator-support.js';

const cluster = useSharedCluster();

const vmWebhook = 'admission webhook "virtualmachine-validator.kubevirt.io" denied the request';
const cloneWebhook = 'admission webhook "vm-clone-validator.kubevirt.io" denied the request';

/** What the client sees of a refused write: the HTTP code and the parsed `Status`. */
interface Refusal {
  code: number;
  status: { code?: number; reason?: string; message?: string; details?: { causes?: unknown[] } };
}

async function refusalOf(write: Promise<unknown>): Promise<Refusal | undefined> {
  try {
    await write;
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    return { code: error.code, status: JSON.parse(String(error.body)) };
  }
}

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const api = cluster().kubeConfig.makeApiClient(CustomObjectsApi);
  const createVm = (vm: unknown) =>
    api.createNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      namespace,
      body: vm,
    });
  const createClone = (spec: unknown, version: 'v1beta1' | 'v1alpha1' = 'v1beta1') =>
    api.createNamespacedCustomObject({
      group: 'clone.kubevirt.io',
      version,
      plural: 'virtualmachineclones',
      namespace,
      body: {
        apiVersion: `clone.kubevirt.io/${version}`,
        kind: 'VirtualMachineClone',
        metadata: { name: 'desk-1-clone' },
        spec,
      },
    });
  return { namespace, createVm, createClone, objects: kubevirtObjects(cluster().kubeConfig, namespace) };
}

/** A VM KubeVirt admits, with one disk on one volume, changed by `change`. */
function desk(change: (spec: VirtualMachine['spec']) => void = () => {}): VirtualMachine {
  const vm = sampleVm('desk-1');
  const template = vm.spec.template?.spec as Record<string, unknown> & {
    domain: { devices: Record<string, unknown> };
  };
  template.domain.devices.disks = [{ name: 'root', disk: { bus: 'virtio' } }];
  template.volumes = [{ name: 'root', containerDisk: { image: 'quay.io/containerdisks/fedora:42' } }];
  change(vm.spec);
  return vm;
}

const templateOf = (spec: VirtualMachine['spec']) =>
  spec.template?.spec as Record<string, unknown> & { domain: { devices: Record<string, unknown[]> } };

describe("the simulator's copy of KubeVirt's VirtualMachine webhook", () => {
  it('admits a VM with a run strategy and its disks, volumes, interfaces and networks paired', async () => {
    const { createVm } = await setUp('admit-vm');
    expect(await refusalOf(createVm(desk()))).toBeUndefined();
  });

  it.each<[string, (spec: VirtualMachine['spec']) => void, string]>([
    [
      'running and runStrategy together',
      (spec) => {
        spec.running = false;
      },
      'Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead',
    ],
    [
      'neither running nor runStrategy',
      (spec) => {
        delete spec.runStrategy;
      },
      'RunStrategy must be specified',
    ],
    [
      'a run strategy KubeVirt does not know',
      (spec) => {
        spec.runStrategy = 'Paused' as never;
      },
      'Invalid RunStrategy (Paused)',
    ],
    [
      'a reserved kubevirt.io/ label on its template',
      (spec) => {
        spec.template = { ...spec.template, metadata: { labels: { 'kubevirt.io/created-by': 'someone' } } };
      },
      'creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited',
    ],
    [
      'a disk without a volume',
      (spec) => {
        templateOf(spec).volumes = [];
      },
      "spec.template.spec.domain.devices.disks[0].Name 'root' not found.",
    ],
    [
      'two disks of one name',
      (spec) => {
        templateOf(spec).domain.devices.disks?.push({ name: 'root', disk: {} });
      },
      'spec.template.spec.domain.devices.disks[1] and spec.template.spec.domain.devices.disks[0] must not have the same Name.',
    ],
    [
      'a disk with two target types',
      (spec) => {
        templateOf(spec).domain.devices.disks = [{ name: 'root', disk: {}, cdrom: {} }];
      },
      'spec.template.spec.domain.devices.disks[0] can only have a single target type defined',
    ],
    [
      'two volumes of one name',
      (spec) => {
        (templateOf(spec).volumes as unknown[]).push({ name: 'root', emptyDisk: { capacity: '1Gi' } });
      },
      'spec.template.spec.volumes[1] and spec.template.spec.volumes[0] must not have the same Name.',
    ],
    [
      'a volume without a source',
      (spec) => {
        templateOf(spec).volumes = [{ name: 'root' }];
      },
      'spec.template.spec.volumes[0] must have exactly one source type set',
    ],
    [
      'an interface without a network',
      (spec) => {
        templateOf(spec).networks = [];
      },
      "spec.template.spec.domain.devices.interfaces[0].name 'default' not found.",
    ],
    [
      'a network without an interface',
      (spec) => {
        templateOf(spec).domain.devices.interfaces = [];
      },
      "spec.template.spec.networks[0].name 'default' not found.",
    ],
    [
      'two interfaces of one name',
      (spec) => {
        templateOf(spec).domain.devices.interfaces?.push({ name: 'default', masquerade: {} });
      },
      'Only one interface can be connected to one specific network',
    ],
    [
      'two networks of one name',
      (spec) => {
        (templateOf(spec).networks as unknown[]).push({ name: 'default', multus: { networkName: 'lan' } });
      },
      'Network with name "default" already exists, every network must have a unique name',
    ],
    [
      'a network without a type',
      (spec) => {
        templateOf(spec).networks = [{ name: 'default' }];
      },
      'should have a network type',
    ],
  ])('refuses a VM with %s as KubeVirt does, 422 Invalid', async (_, change, message) => {
    const { createVm, objects } = await setUp('refuse-vm');
    const refusal = await refusalOf(createVm(desk(change)));
    expect(refusal).toMatchObject({
      code: 422,
      status: {
        kind: 'Status',
        status: 'Failure',
        code: 422,
        reason: 'Invalid',
        message: `${vmWebhook}: ${message}`,
      },
    });
    expect(refusal?.status.details?.causes).toContainEqual(expect.objectContaining({ message }));
    expect(await objects.getVm('desk-1')).toBeUndefined();
  });

  it('refuses an update that adds running beside runStrategy and leaves the VM as it was', async () => {
    const { objects } = await setUp('refuse-update');
    await objects.createVm(desk());
    const refusal = await refusalOf(objects.patchVm('desk-1', { spec: { running: true } }));
    expect(refusal).toMatchObject({
      code: 422,
      status: {
        reason: 'Invalid',
        message: `${vmWebhook}: Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead`,
      },
    });
    expect((await objects.getVm('desk-1'))?.spec).not.toHaveProperty('running');
  });

  it("gives the SDK's caller KubeVirt's refusal as INVALID_INPUT", async () => {
    const { namespace } = await setUp('sdk-refusal');
    const error = await new KubeCluster(cluster().kubeConfig)
      .createVm(
        namespace,
        desk((spec) => Object.assign(spec, { running: true })),
      )
      .catch((caught: unknown) => caught);
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toBe(
      `Could not create VirtualMachine ${namespace}/desk-1: ${vmWebhook}: Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead.`,
    );
    expect((error as { details: unknown }).details).toMatchObject({ status: 422, reason: 'Invalid' });
  });
});

const golden = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' };
const memberTarget = { ...golden, name: 'desk-1' };

describe("the simulator's copy of KubeVirt's VirtualMachineClone webhook", () => {
  it.each(['v1beta1', 'v1alpha1'] as const)(
    'admits a clone of a VM into a VM of another name through %s',
    async (version) => {
      const { createClone, objects } = await setUp(`admit-clone-${version}`);
      const spec: VirtualMachineClone['spec'] = {
        source: golden,
        target: memberTarget,
        labelFilters: ['*', '!corral.dev/*'],
        template: { annotationFilters: ['*'] },
        patches: ['{"op":"add","path":"/spec/runStrategy","value":"Halted"}'],
      };
      expect(await refusalOf(createClone(spec, version))).toBeUndefined();
      expect(await objects.getClone('desk-1-clone')).toBeDefined();
    },
  );

  const refused: Array<[string, Record<string, unknown>, string]> = [
    [
      'a target named like its source VM',
      { source: golden, target: golden },
      'Target name cannot be equal to source name when both are VirtualMachines',
    ],
    [
      'a source that is not a VM or a snapshot',
      { source: { ...golden, kind: 'VirtualMachineInstance' }, target: memberTarget },
      'Source kind is not supported',
    ],
    [
      'a target that is not a VM',
      { source: golden, target: { ...memberTarget, kind: 'VirtualMachineInstance' } },
      'Target kind is not supported',
    ],
    [
      'a source without an API group',
      { source: { kind: 'VirtualMachine', name: 'golden' }, target: memberTarget },
      "Source's APIGroup cannot be empty",
    ],
    [
      'a source with an empty name',
      { source: { ...golden, name: '' }, target: memberTarget },
      "Source's name cannot be empty",
    ],
    [
      'a lone negation among its label filters',
      { source: golden, target: memberTarget, labelFilters: ['*', '!'] },
      'a negation character is not a valid filter',
    ],
    [
      'a negation inside an annotation filter',
      { source: golden, target: memberTarget, annotationFilters: ['corral!dev'] },
      'spec.annotations filter corral!dev is invalid: cannot contain a negation character (!); FilterRules: NegationChar can be only used at the beginning of the filter',
    ],
    [
      'a wildcard before the end of a template label filter',
      { source: golden, target: memberTarget, template: { labelFilters: ['*.corral.dev'] } },
      'spec.template.labels filter *.corral.dev is invalid: cannot contain a wildcard character (*); FilterRules: WildcardChar can be only at the end of the filter',
    ],
    [
      'a malformed MAC address',
      { source: golden, target: memberTarget, newMacAddresses: { default: '02:00:00:00:00' } },
      'interface default has malformed MAC address (02:00:00:00:00).',
    ],
    [
      'a patch that is not JSON',
      { source: golden, target: memberTarget, patches: ['{"op":"add"'] },
      'patch is not valid JSON ({"op":"add")',
    ],
  ];

  it.each(['v1beta1', 'v1alpha1'] as const)(
    'refuses every clone KubeVirt refuses through %s, 422 Invalid, with its message',
    async (version) => {
      const { createClone, objects } = await setUp(`refuse-clone-${version}`);
      for (const [what, spec, message] of refused) {
        const refusal = await refusalOf(createClone(spec, version));
        expect(refusal, what).toMatchObject({
          code: 422,
          status: { code: 422, reason: 'Invalid', message: `${cloneWebhook}: ${message}` },
        });
      }
      expect(await objects.getClone('desk-1-clone')).toBeUndefined();
    },
  );

  it("gives the SDK's caller KubeVirt's refusal of a clone as INVALID_INPUT", async () => {
    const { namespace } = await setUp('sdk-clone-refusal');
    const error = await new KubeCluster(cluster().kubeConfig)
      .createClone(namespace, {
        metadata: { name: 'golden-clone' },
        spec: { source: golden, target: golden },
      })
      .catch((caught: unknown) => caught);
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toBe(
      `Could not create VirtualMachineClone ${namespace}/golden-clone: ${cloneWebhook}: Target name cannot be equal to source name when both are VirtualMachines.`,
    );
  });
});
