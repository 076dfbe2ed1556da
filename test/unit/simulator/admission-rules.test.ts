import { describe, expect, it } from 'vitest';
import {
  type AdmissionCause,
  admitVirtualMachine,
  admitVirtualMachineClone,
  refusalOf,
} from '../../../src/testing/kubevirt/admission-rules.js';

type Spec = Record<string, unknown>;

/** A VM that KubeVirt admits: one pod network with its interface, one disk with its volume. */
function vm(spec: Spec = {}, templateSpec: Spec = {}, templateLabels: Record<string, string> = {}) {
  return {
    metadata: { name: 'desk' },
    spec: {
      runStrategy: 'Halted',
      template: {
        metadata: { labels: { app: 'desktop', ...templateLabels } },
        spec: {
          domain: {
            devices: {
              disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              interfaces: [{ name: 'default', masquerade: {} }],
            },
          },
          networks: [{ name: 'default', pod: {} }],
          volumes: [{ name: 'root', persistentVolumeClaim: { claimName: 'root' } }],
          ...templateSpec,
        },
      },
      ...spec,
    },
  };
}

function devices(extra: Spec): Spec {
  return {
    domain: {
      devices: {
        disks: [{ name: 'root', disk: {} }],
        interfaces: [{ name: 'default', masquerade: {} }],
        ...extra,
      },
    },
  };
}

const rootVolume = { name: 'root', persistentVolumeClaim: { claimName: 'root' } };

describe('admitVirtualMachine, like virt-api v1.9.0', () => {
  it('admits a VM with a run strategy, paired disks and volumes, and paired interfaces and networks', () => {
    expect(admitVirtualMachine(vm())).toBeUndefined();
  });

  it.each<[string, Spec]>([
    ['the deprecated running field alone', { runStrategy: undefined, running: true }],
    ['every run strategy KubeVirt knows', { runStrategy: 'RerunOnFailure' }],
    ['the Once run strategy', { runStrategy: 'Once' }],
  ])('admits %s', (_, spec) => {
    expect(admitVirtualMachine(vm(spec))).toBeUndefined();
  });

  it('admits a template without interfaces or networks, which KubeVirt gives its default pod network', () => {
    expect(
      admitVirtualMachine(vm({}, { domain: { devices: {} }, networks: undefined, volumes: [] })),
    ).toBeUndefined();
  });

  it('admits a volume without a disk, since KubeVirt adds one for it before it validates', () => {
    expect(
      admitVirtualMachine(vm({}, { domain: { devices: {} }, networks: [], volumes: [rootVolume] })),
    ).toBeUndefined();
  });

  it('admits a VM being deleted whatever it holds', () => {
    const doomed = { metadata: { name: 'desk', deletionTimestamp: '2026-01-01T00:00:00Z' }, spec: {} };
    expect(admitVirtualMachine(doomed)).toBeUndefined();
  });

  it.each<[string, ReturnType<typeof vm> | Record<string, unknown>, AdmissionCause[]]>([
    [
      'running and runStrategy together',
      vm({ running: false }),
      [
        {
          type: 'FieldValueInvalid',
          message:
            'Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead',
          field: 'spec.running',
        },
      ],
    ],
    [
      'neither running nor runStrategy',
      vm({ runStrategy: undefined }),
      [{ type: 'FieldValueInvalid', message: 'RunStrategy must be specified', field: 'spec.running' }],
    ],
    [
      'a run strategy KubeVirt does not know',
      vm({ runStrategy: 'Sometimes' }),
      [{ type: 'FieldValueInvalid', message: 'Invalid RunStrategy (Sometimes)', field: 'spec.runStrategy' }],
    ],
    [
      'WaitAsReceiver without its feature gate',
      vm({ runStrategy: 'WaitAsReceiver' }),
      [
        {
          type: 'FieldValueInvalid',
          message:
            'Invalid RunStrategy (WaitAsReceiver), DecentralizedLiveMigration feature gate is not enabled in kubevirt resource',
          field: 'spec.runStrategy',
        },
      ],
    ],
    [
      'no template',
      { metadata: { name: 'desk' }, spec: { runStrategy: 'Halted' } },
      [{ type: 'FieldValueRequired', message: 'missing virtual machine template.', field: 'spec.template' }],
    ],
    [
      'a reserved kubevirt.io/ label on the template',
      vm({}, {}, { 'kubevirt.io/nodeName': 'node-1' }),
      [
        {
          type: 'FieldValueNotSupported',
          message: 'creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited',
          field: 'spec.template.metadata.labels',
        },
      ],
    ],
    [
      'a disk without a volume',
      vm({}, { volumes: [] }),
      [
        {
          type: 'FieldValueInvalid',
          message: "spec.template.spec.domain.devices.disks[0].Name 'root' not found.",
          field: 'spec.template.spec.domain.devices.disks[0].name',
        },
      ],
    ],
    [
      'two disks of one name',
      vm({}, devices({ disks: [{ name: 'root' }, { name: 'root' }] })),
      [
        {
          type: 'FieldValueInvalid',
          message:
            'spec.template.spec.domain.devices.disks[1] and spec.template.spec.domain.devices.disks[0] must not have the same Name.',
          field: 'spec.template.spec.domain.devices.disks[1].name',
        },
      ],
    ],
    [
      'a disk with two target types',
      vm({}, devices({ disks: [{ name: 'root', disk: {}, cdrom: {} }] })),
      [
        {
          type: 'FieldValueInvalid',
          message: 'spec.template.spec.domain.devices.disks[0] can only have a single target type defined',
          field: 'spec.template.spec.domain.devices.disks[0]',
        },
      ],
    ],
    [
      'two volumes of one name',
      vm({}, { volumes: [rootVolume, { name: 'root', emptyDisk: { capacity: '1Gi' } }] }),
      [
        {
          type: 'FieldValueInvalid',
          message:
            'spec.template.spec.volumes[1] and spec.template.spec.volumes[0] must not have the same Name.',
          field: 'spec.template.spec.volumes[1].name',
        },
      ],
    ],
    [
      'a volume without a source',
      vm({}, { volumes: [{ name: 'root' }] }),
      [
        {
          type: 'FieldValueInvalid',
          message: 'spec.template.spec.volumes[0] must have exactly one source type set',
          field: 'spec.template.spec.volumes[0]',
        },
      ],
    ],
    [
      'a volume with two sources',
      vm({}, { volumes: [{ ...rootVolume, emptyDisk: { capacity: '1Gi' } }] }),
      [
        {
          type: 'FieldValueInvalid',
          message: 'spec.template.spec.volumes[0] must have exactly one source type set',
          field: 'spec.template.spec.volumes[0]',
        },
      ],
    ],
    [
      'an interface without a network',
      vm({}, { networks: [] }),
      [
        {
          type: 'FieldValueInvalid',
          message: "spec.template.spec.domain.devices.interfaces[0].name 'default' not found.",
          field: 'spec.template.spec.domain.devices.interfaces[0].name',
        },
      ],
    ],
    [
      'a network without an interface',
      vm({}, devices({ interfaces: [] })),
      [
        {
          type: 'FieldValueRequired',
          message: "spec.template.spec.networks[0].name 'default' not found.",
          field: 'spec.template.spec.networks[0].name',
        },
      ],
    ],
    [
      'two interfaces of one name',
      vm({}, devices({ interfaces: [{ name: 'default' }, { name: 'default' }] })),
      [
        {
          type: 'FieldValueDuplicate',
          message: 'Only one interface can be connected to one specific network',
          field: 'spec.template.spec.domain.devices.interfaces[1].name',
        },
      ],
    ],
    [
      'a network without a type',
      vm({}, { networks: [{ name: 'default' }] }),
      [
        {
          type: 'FieldValueRequired',
          message: 'should have a network type',
          field: 'spec.template.spec.networks[0]',
        },
      ],
    ],
  ])('refuses %s', (_, object, causes) => {
    expect(admitVirtualMachine(object)).toEqual({
      code: 422,
      reason: 'Invalid',
      message: causes.map((cause) => cause.message).join(', '),
      causes,
    });
  });

  it('refuses two pod networks and two networks of one name with every cause, in KubeVirt order', () => {
    const refusal = admitVirtualMachine(
      vm(
        {},
        {
          ...devices({ interfaces: [{ name: 'default' }, { name: 'second' }] }),
          networks: [
            { name: 'default', pod: {} },
            { name: 'default', pod: {} },
          ],
        },
      ),
    );
    expect(refusal?.causes.map((cause) => cause.message)).toEqual([
      'more than one interface is connected to a pod network in spec.template.spec.interfaces',
      'Network with name "default" already exists, every network must have a unique name',
      "spec.template.spec.domain.devices.interfaces[1].name 'second' not found.",
    ]);
  });
});

describe('refusalOf', () => {
  it('reports nothing for no causes', () => {
    expect(refusalOf([])).toBeUndefined();
  });

  it('reports the first ten causes and counts the rest, as virt-api does', () => {
    const causes = Array.from({ length: 12 }, (_, index) => ({
      type: 'FieldValueInvalid' as const,
      message: `cause ${index}`,
      field: 'spec',
    }));
    const refusal = refusalOf(causes);
    expect(refusal?.causes).toHaveLength(10);
    expect(refusal?.message).toBe(
      `${causes
        .slice(0, 10)
        .map((cause) => cause.message)
        .join(', ')}, and 2 more validation errors`,
    );
  });
});

const golden = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'golden' };

function clone(spec: Spec = {}) {
  return {
    metadata: { name: 'desk-1-clone' },
    spec: { source: golden, target: { ...golden, name: 'desk-1' }, ...spec },
  };
}

describe('admitVirtualMachineClone, like virt-api v1.9.0', () => {
  it.each<[string, Spec]>([
    ['a clone of a VM into a VM of another name', {}],
    ['a clone without a target, which KubeVirt names itself', { target: undefined }],
    [
      'a clone of a snapshot',
      { source: { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 'golden' } },
    ],
    [
      "the pool's own filters",
      {
        labelFilters: ['*', '!corral.dev/*'],
        annotationFilters: ['*', '!corral.dev/*'],
        template: { labelFilters: ['*'], annotationFilters: ['app'] },
      },
    ],
    [
      'MAC addresses in the three notations, and an empty one',
      { newMacAddresses: { a: '02:00:00:00:00:01', b: '02-00-00-00-00-02', c: '0200.0000.0003', d: '' } },
    ],
    ['patches that are JSON', { patches: ['{"op":"add","path":"/spec/runStrategy","value":"Halted"}'] }],
  ])('admits %s', (_, spec) => {
    expect(admitVirtualMachineClone(clone(spec))).toBeUndefined();
  });

  it.each<[string, Spec, Array<[string, string]>]>([
    [
      'a target named like its source VM',
      { target: golden },
      [['spec.target.name', 'Target name cannot be equal to source name when both are VirtualMachines']],
    ],
    [
      'a source of another kind',
      { source: { ...golden, kind: 'VirtualMachineInstance' } },
      [['spec.Source.Kind', 'Source kind is not supported']],
    ],
    [
      'a target of another kind',
      { target: { ...golden, kind: 'Pod', name: 'desk-1' } },
      [['spec.Target.Kind', 'Target kind is not supported']],
    ],
    [
      'a source without an API group',
      { source: { kind: 'VirtualMachine', name: 'golden' } },
      [['spec.Source.APIGroup', "Source's APIGroup cannot be empty"]],
    ],
    [
      'a source with an empty kind',
      { source: { ...golden, kind: '' } },
      [
        ['spec.Source.Kind', 'Source kind is not supported'],
        ['spec.Source', "Source's Kind cannot be empty"],
      ],
    ],
    [
      'a source with an empty name',
      { source: { ...golden, name: '' } },
      [['spec.Source.Name', "Source's name cannot be empty"]],
    ],
    ['no source', { source: undefined }, [['spec.Source', 'Source cannot be nil']]],
    [
      'a lone negation as a filter',
      { labelFilters: ['!'] },
      [['spec.labels', 'a negation character is not a valid filter']],
    ],
    [
      'a negation inside a filter',
      { annotationFilters: ['corral!dev'] },
      [
        [
          'spec.annotations',
          'spec.annotations filter corral!dev is invalid: cannot contain a negation character (!); FilterRules: NegationChar can be only used at the beginning of the filter',
        ],
      ],
    ],
    [
      'a wildcard before the end of a template filter',
      { template: { labelFilters: ['*.corral.dev'] } },
      [
        [
          'spec.template.labels',
          'spec.template.labels filter *.corral.dev is invalid: cannot contain a wildcard character (*); FilterRules: WildcardChar can be only at the end of the filter',
        ],
      ],
    ],
    [
      'a malformed MAC address',
      { newMacAddresses: { default: '02:00:00:00:00' } },
      [['spec.newMacAddresses.default', 'interface default has malformed MAC address (02:00:00:00:00).']],
    ],
    [
      'a MAC address longer than six bytes',
      { newMacAddresses: { default: '02:00:00:00:00:00:00:01' } },
      [
        [
          'spec.newMacAddresses.default',
          'interface default has malformed MAC address (02:00:00:00:00:00:00:01).',
        ],
      ],
    ],
    [
      'a patch that is not JSON',
      { patches: ['{"op":"add"', '{}'] },
      [['spec.patches[0]', 'patch is not valid JSON ({"op":"add")']],
    ],
  ])('refuses %s', (_, spec, causes) => {
    expect(admitVirtualMachineClone(clone(spec))).toEqual({
      code: 422,
      reason: 'Invalid',
      message: causes.map(([, message]) => message).join(', '),
      causes: causes.map(([field, message]) => ({ type: 'FieldValueInvalid', field, message })),
    });
  });
});
