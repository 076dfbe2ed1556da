import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AdmitPoolInput, admitPool } from '../../../src/capacity/admit-pool.js';
import { isVdiError } from '../../../src/errors.js';
import type { NodeObject } from '../../../src/kube-objects.js';
import type {
  PermittedHostDevices,
  VirtualMachine,
  VirtualMachineInstance,
} from '../../../src/kubevirt-types.js';

const a10 = 'nvidia.com/GA102GL_A10';
const a10Profile = 'nvidia.com/NVIDIA_A10-4Q';
const nic = 'intel.com/sriov_vf';
const permitted: PermittedHostDevices = {
  pciHostDevices: [{ resourceName: a10, pciVendorSelector: '10DE:2236' }],
  mediatedDevices: [{ resourceName: a10Profile, mdevNameSelector: 'NVIDIA A10-4Q' }],
};
const permittedWithNic: PermittedHostDevices = {
  ...permitted,
  pciHostDevices: [
    ...(permitted.pciHostDevices ?? []),
    { resourceName: nic, externalResourceProvider: true },
  ],
};

function golden(
  gpus: string[],
  hostDevices: string[] = [],
  nodeSelector?: Record<string, string>,
): VirtualMachine {
  return {
    metadata: { name: 'golden-desktop', namespace: 'corral-vms' },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          ...(nodeSelector ? { nodeSelector } : {}),
          domain: {
            devices: {
              gpus: gpus.map((deviceName, index) => ({ name: `gpu${index + 1}`, deviceName })),
              hostDevices: hostDevices.map((deviceName, index) => ({ name: `dev${index + 1}`, deviceName })),
            },
          },
        },
      },
    },
  };
}

function node(
  name: string,
  allocatable: Record<string, string>,
  extra: Partial<NodeObject> = {},
): NodeObject {
  return {
    metadata: { name },
    status: { allocatable: { cpu: '16', memory: '64Gi', ...allocatable } },
    ...extra,
  };
}

function vmi(
  nodeName: string | undefined,
  gpus: string[],
  phase: NonNullable<VirtualMachineInstance['status']>['phase'] = 'Running',
): VirtualMachineInstance {
  return {
    metadata: { name: `vmi-${Math.abs(gpus.length)}`, namespace: 'other' },
    spec: {
      domain: { devices: { gpus: gpus.map((deviceName, index) => ({ name: `g${index}`, deviceName })) } },
    },
    status: { phase, ...(nodeName ? { nodeName } : {}) },
  };
}

interface Case {
  name: string;
  input: AdmitPoolInput;
  kind: 'admit' | 'reject';
  fits?: number;
  shortfall?: number;
  reason?: 'not-permitted' | 'insufficient';
  message?: RegExp[];
}

const cases: Case[] = [
  {
    name: 'a VM without devices is admitted without looking at any node',
    input: { golden: golden([]), size: 50, permittedHostDevices: {}, nodes: [], vmis: [] },
    kind: 'admit',
  },
  {
    name: 'PCI passthrough is one GPU per member, less the GPUs running VMIs hold',
    input: {
      golden: golden([a10]),
      size: 3,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2' }), node('gpu-b', { [a10]: '2' })],
      vmis: [vmi('gpu-a', [a10])],
    },
    kind: 'admit',
    fits: 3,
  },
  {
    name: 'PCI passthrough refuses one member more than there are free GPUs',
    input: {
      golden: golden([a10]),
      size: 4,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2' }), node('gpu-b', { [a10]: '2' })],
      vmis: [vmi('gpu-a', [a10])],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 3,
    shortfall: 1,
    message: [
      /4 members/,
      /1 short/,
      /gpu-a: .*2 allocatable, 1 in use, 1 free → hosts 1/,
      /Too few free units in total/,
    ],
  },
  {
    name: 'vGPU profiles share a card: a node advertising 6 slots hosts 6 members',
    input: {
      golden: golden([a10Profile]),
      size: 6,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10Profile]: '6' })],
      vmis: [],
    },
    kind: 'admit',
    fits: 6,
  },
  {
    name: 'vGPU profiles refuse a seventh member on a card of six slots with one in use',
    input: {
      golden: golden([a10Profile]),
      size: 6,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10Profile]: '6' })],
      vmis: [vmi('gpu-a', [a10Profile])],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 5,
    shortfall: 1,
    message: [/\(mediated\)/],
  },
  {
    name: 'two GPUs per member that fit in total but not on any one node are refused',
    input: {
      golden: golden([a10, a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [
        node('gpu-a', { [a10]: '1' }),
        node('gpu-b', { [a10]: '1' }),
        node('gpu-c', { [a10]: '1' }),
        node('gpu-d', { [a10]: '1' }),
      ],
      vmis: [],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 0,
    shortfall: 2,
    message: [/2 × nvidia\.com\/GA102GL_A10/, /add up to enough/],
  },
  {
    name: 'a GPU and a NIC per member on different nodes fit in total but host nobody',
    input: {
      golden: golden([a10], [nic]),
      size: 1,
      permittedHostDevices: permittedWithNic,
      nodes: [node('gpu-a', { [a10]: '4' }), node('net-a', { [nic]: '8' })],
      vmis: [],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 0,
    shortfall: 1,
    message: [/\(external-provider\)/, /add up to enough/],
  },
  {
    name: 'a GPU and a NIC per member are bounded by the scarcer one on each node',
    input: {
      golden: golden([a10], [nic]),
      size: 3,
      permittedHostDevices: permittedWithNic,
      nodes: [node('gpu-a', { [a10]: '4', [nic]: '1' }), node('gpu-b', { [a10]: '2', [nic]: '8' })],
      vmis: [],
    },
    kind: 'admit',
    fits: 3,
  },
  {
    name: 'nodes with nothing host nothing and say so',
    input: {
      golden: golden([a10]),
      size: 1,
      permittedHostDevices: permitted,
      nodes: [node('cpu-a', {}), node('cpu-b', {})],
      vmis: [],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 0,
    shortfall: 1,
    message: [/2 other nodes advertise none of these devices/],
  },
  {
    name: 'a cluster without nodes hosts nothing',
    input: { golden: golden([a10]), size: 1, permittedHostDevices: permitted, nodes: [], vmis: [] },
    kind: 'reject',
    reason: 'insufficient',
    fits: 0,
    shortfall: 1,
  },
  {
    name: 'an unknown resource name is not permitted, and the message says how to permit it',
    input: {
      golden: golden(['example.com/unknown-gpu']),
      size: 1,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { 'example.com/unknown-gpu': '4' })],
      vmis: [],
    },
    kind: 'reject',
    reason: 'not-permitted',
    fits: 0,
    shortfall: 1,
    message: [
      /"example\.com\/unknown-gpu" \(gpus\/gpu1\)/,
      /does not permit/,
      /permittedHostDevices/,
      /externalResourceProvider/,
    ],
  },
  {
    name: 'an unschedulable node hosts nothing whatever it advertises',
    input: {
      golden: golden([a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [
        node('gpu-a', { [a10]: '4' }, { spec: { unschedulable: true } }),
        node('gpu-b', { [a10]: '1' }),
      ],
      vmis: [],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 1,
    shortfall: 1,
    message: [/gpu-a \(unschedulable\)/],
  },
  {
    name: 'nodes the golden VM’s nodeSelector rules out host nothing',
    input: {
      golden: golden([a10], [], { pool: 'desktops' }),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [
        node('gpu-a', { [a10]: '2' }, { metadata: { name: 'gpu-a', labels: { pool: 'desktops' } } }),
        node('gpu-b', { [a10]: '2' }),
      ],
      vmis: [],
    },
    kind: 'admit',
    fits: 2,
  },
  {
    name: 'finished VMIs hold nothing, on a node or not',
    input: {
      golden: golden([a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2' })],
      vmis: [
        vmi('gpu-a', [a10], 'Succeeded'),
        vmi('gpu-a', [a10], 'Failed'),
        vmi(undefined, [a10], 'Failed'),
      ],
    },
    kind: 'admit',
    fits: 2,
  },
  {
    name: 'a pending VMI without a node takes its GPU from the cluster as a whole',
    input: {
      golden: golden([a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '1' }), node('gpu-b', { [a10]: '1' })],
      vmis: [vmi(undefined, [a10], 'Pending')],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 1,
    shortfall: 1,
    message: [
      /2 free on nodes that can take members, 1 asked for by VMIs waiting for a node, 2 needed/,
      /VMIs waiting for a node \(other\/vmi-1\) .* room for up to 1 member wherever they land/,
    ],
  },
  {
    name: 'a scheduling VMI without a node counts as well, and what is left still fits',
    input: {
      golden: golden([a10]),
      size: 3,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2' }), node('gpu-b', { [a10]: '2' })],
      vmis: [vmi(undefined, [a10], 'Scheduling')],
    },
    kind: 'admit',
    fits: 3,
  },
  {
    name: 'a waiting VMI with one GPU can cost a member of two GPUs its node',
    input: {
      golden: golden([a10, a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2' }), node('gpu-b', { [a10]: '2' })],
      vmis: [vmi(undefined, [a10], 'Pending')],
    },
    kind: 'reject',
    reason: 'insufficient',
    fits: 1,
    shortfall: 1,
    message: [/room for up to 1 member/],
  },
  {
    name: 'a waiting VMI that asks for other devices takes nothing the members need',
    input: {
      golden: golden([a10]),
      size: 2,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '2', [a10Profile]: '4' })],
      vmis: [vmi(undefined, [a10Profile], 'Pending')],
    },
    kind: 'admit',
    fits: 2,
  },
  {
    name: 'a node whose VMIs hold more than it advertises has nothing free, not less than nothing',
    input: {
      golden: golden([a10]),
      size: 1,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '1' }), node('gpu-b', { [a10]: '1' })],
      vmis: [vmi('gpu-a', [a10, a10, a10])],
    },
    kind: 'admit',
    fits: 1,
  },
  {
    name: 'an allocatable written with a suffix counts in full',
    input: {
      golden: golden([a10Profile]),
      size: 1000,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10Profile]: '1k' })],
      vmis: [],
    },
    kind: 'admit',
    fits: 1000,
  },
  {
    name: 'no member at all is admitted even when nothing fits',
    input: { golden: golden([a10]), size: 0, permittedHostDevices: permitted, nodes: [], vmis: [] },
    kind: 'admit',
    fits: 0,
  },
];

describe('admitPool', () => {
  it.each(cases)('$name', ({ input, kind, fits, shortfall, reason, message }) => {
    const plan = admitPool(input);
    expect(plan.kind).toBe(kind);
    expect(plan.fits).toBe(fits);
    if (plan.kind === 'reject') {
      expect(plan.shortfall).toBe(shortfall);
      expect(plan.reason).toBe(reason);
      for (const pattern of message ?? []) expect(plan.message).toMatch(pattern);
    }
  });

  it.each(cases.filter((each) => each.kind === 'reject'))(
    'starts the refusal with the phrase the original troubleshooting guide names: $name',
    ({ input }) => {
      const plan = admitPool(input);
      if (plan.kind !== 'reject') throw new Error('expected a refusal');
      const phrase =
        plan.reason === 'insufficient'
          ? 'insufficient device capacity for "golden-desktop"'
          : 'device admission failed';
      expect(plan.message.startsWith(`${phrase}: `)).toBe(true);
    },
  );

  it('tabulates every node and needed resource with its numbers', () => {
    const plan = admitPool({
      golden: golden([a10, a10], [nic]),
      size: 1,
      permittedHostDevices: permittedWithNic,
      nodes: [node('gpu-b', { [a10]: '3', [nic]: '2' }), node('gpu-a', { [a10]: '1' })],
      vmis: [vmi('gpu-b', [a10])],
    });
    expect(plan.table).toEqual([
      {
        node: 'gpu-a',
        resource: nic,
        kind: 'external-provider',
        allocatable: 0,
        inUse: 0,
        free: 0,
        perMember: 1,
        hostsMembers: 0,
      },
      {
        node: 'gpu-a',
        resource: a10,
        kind: 'pci-passthrough',
        allocatable: 1,
        inUse: 0,
        free: 1,
        perMember: 2,
        hostsMembers: 0,
      },
      {
        node: 'gpu-b',
        resource: nic,
        kind: 'external-provider',
        allocatable: 2,
        inUse: 0,
        free: 2,
        perMember: 1,
        hostsMembers: 1,
      },
      {
        node: 'gpu-b',
        resource: a10,
        kind: 'pci-passthrough',
        allocatable: 3,
        inUse: 1,
        free: 2,
        perMember: 2,
        hostsMembers: 1,
      },
    ]);
  });

  it('names the device entries it cannot count, such as resource claims without a deviceName', () => {
    const vm = golden([a10]);
    vm.spec.template?.spec?.domain?.devices?.gpus?.push({ name: 'dra-gpu', claimName: 'gpu-claim' } as never);
    const plan = admitPool({
      golden: vm,
      size: 1,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '1' })],
      vmis: [],
    });
    expect(plan).toMatchObject({
      kind: 'admit',
      uncounted: [{ entry: 'gpus/dra-gpu', reason: expect.stringMatching(/no deviceName/) }],
    });
  });

  it('names the waiting VMIs and the members’ room they take', () => {
    const plan = admitPool({
      golden: golden([a10]),
      size: 1,
      permittedHostDevices: permitted,
      nodes: [node('gpu-a', { [a10]: '4' })],
      vmis: [vmi(undefined, [a10, a10], 'Pending'), vmi(undefined, [], 'Pending')],
    });
    expect(plan).toMatchObject({
      kind: 'admit',
      fits: 2,
      unscheduled: { vmis: ['other/vmi-2'], members: 2 },
    });
  });

  it.each([-1, 1.5, Number.NaN])('refuses the size %s as invalid input', (size) => {
    const attempt = () =>
      admitPool({ golden: golden([]), size, permittedHostDevices: {}, nodes: [], vmis: [] });
    expect(attempt).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    try {
      attempt();
    } catch (error) {
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    }
  });
});

// Small random clusters, checked against a placement search that knows nothing of the formula.
const resources = ['example.com/r0', 'example.com/r1'] as const;
const allPermitted: PermittedHostDevices = {
  pciHostDevices: resources.map((resourceName) => ({ resourceName })),
};

interface SmallCluster {
  needs: number[];
  nodes: Array<{ allocatable: number[]; unschedulable: boolean }>;
  vmis: Array<{ node: number; uses: number[]; phase: 'Running' | 'Succeeded' | 'Pending' }>;
  size: number;
}

function smallCluster(types: 1 | 2): fc.Arbitrary<SmallCluster> {
  const counts = (max: number, min = 0) =>
    fc.array(fc.integer({ min, max }), { minLength: types, maxLength: types });
  return fc.record({
    needs: counts(3, 1),
    nodes: fc.array(
      fc.record({ allocatable: counts(6), unschedulable: fc.nat(4).map((roll) => roll === 0) }),
      { maxLength: 3 },
    ),
    vmis: fc.array(
      fc.record({
        node: fc.nat(2),
        uses: counts(2),
        phase: fc.constantFrom('Running', 'Succeeded', 'Pending'),
      }),
      { maxLength: 3 },
    ),
    size: fc.integer({ min: 0, max: 7 }),
  }) as fc.Arbitrary<SmallCluster>;
}

function inputOf(cluster: SmallCluster): AdmitPoolInput {
  const names = (counts: number[]) =>
    counts.flatMap((count, type) => Array<string>(count).fill(resources[type] ?? ''));
  return {
    golden: golden(names(cluster.needs)),
    size: cluster.size,
    permittedHostDevices: allPermitted,
    nodes: cluster.nodes.map((spec, index) =>
      node(
        `n${index}`,
        Object.fromEntries(spec.allocatable.map((count, type) => [resources[type], String(count)])),
        spec.unschedulable ? { spec: { unschedulable: true } } : {},
      ),
    ),
    vmis: cluster.vmis.map((spec) => vmi(`n${spec.node}`, names(spec.uses), spec.phase)),
  };
}

/** The most members any assignment of members to nodes can place, by trying them all. */
function mostPlaceable(cluster: SmallCluster): number {
  const free = cluster.nodes.map((spec, index) =>
    spec.allocatable.map((count, type) => {
      const held = cluster.vmis
        .filter((entry) => entry.node === index && entry.phase !== 'Succeeded')
        .reduce((sum, entry) => sum + (entry.uses[type] ?? 0), 0);
      return spec.unschedulable ? 0 : Math.max(0, count - held);
    }),
  );
  const place = (from: number): number => {
    let best = 0;
    for (let index = from; index < free.length; index++) {
      const left = free[index] ?? [];
      if (!cluster.needs.every((need, type) => (left[type] ?? 0) >= need)) continue;
      cluster.needs.forEach((need, type) => {
        left[type] = (left[type] ?? 0) - need;
      });
      best = Math.max(best, 1 + place(index));
      cluster.needs.forEach((need, type) => {
        left[type] = (left[type] ?? 0) + need;
      });
    }
    return best;
  };
  return place(0);
}

/** A small cluster plus VMIs that wait for a node, each asking for some units. */
interface WaitingCluster extends SmallCluster {
  waiting: number[][];
}

function waitingCluster(types: 1 | 2): fc.Arbitrary<WaitingCluster> {
  return fc
    .record({
      cluster: smallCluster(types),
      waiting: fc.array(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: types, maxLength: types }), {
        maxLength: 2,
      }),
    })
    .map(({ cluster, waiting }) => ({ ...cluster, waiting }));
}

/** Every way the waiting VMIs can land, one node each, as the cluster they leave. */
function landings(cluster: WaitingCluster): SmallCluster[] {
  let placed: SmallCluster[] = [cluster];
  for (const uses of cluster.waiting) {
    placed = placed.flatMap((partial) =>
      cluster.nodes.map((_, node) => ({
        ...partial,
        vmis: [...partial.vmis, { node, uses, phase: 'Running' as const }],
      })),
    );
  }
  return placed;
}

describe('admitPool on small random clusters', () => {
  it('never admits more members than the worst landing of the VMIs waiting for a node leaves room for', () => {
    fc.assert(
      fc.property(fc.oneof(waitingCluster(1), waitingCluster(2)), (cluster) => {
        const names = (counts: number[]) =>
          counts.flatMap((count, type) => Array<string>(count).fill(resources[type] ?? ''));
        const input = inputOf(cluster);
        const plan = admitPool({
          ...input,
          size: 1,
          vmis: [...input.vmis, ...cluster.waiting.map((uses) => vmi(undefined, names(uses), 'Pending'))],
        });
        const worst = Math.min(...landings(cluster).map(mostPlaceable));
        expect(plan.fits).toBeLessThanOrEqual(worst);
      }),
      { numRuns: 500 },
    );
  });

  it('never admits more members than some placement can run, with one or two device types', () => {
    fc.assert(
      fc.property(fc.oneof(smallCluster(1), smallCluster(2)), (cluster) => {
        const plan = admitPool(inputOf(cluster));
        if (plan.kind === 'admit') expect(mostPlaceable(cluster)).toBeGreaterThanOrEqual(cluster.size);
      }),
      { numRuns: 500 },
    );
  });

  it('admits whenever a placement exists for one device type', () => {
    fc.assert(
      fc.property(smallCluster(1), (cluster) => {
        if (mostPlaceable(cluster) >= cluster.size) expect(admitPool(inputOf(cluster)).kind).toBe('admit');
      }),
      { numRuns: 500 },
    );
  });

  it('counts exactly as many members as the best placement, with two device types too', () => {
    fc.assert(
      fc.property(fc.oneof(smallCluster(1), smallCluster(2)), (cluster) => {
        expect(admitPool({ ...inputOf(cluster), size: 1 }).fits).toBe(mostPlaceable(cluster));
      }),
      { numRuns: 500 },
    );
  });

  it('reports a shortfall of exactly the members that do not fit', () => {
    fc.assert(
      fc.property(smallCluster(2), (cluster) => {
        const plan = admitPool(inputOf(cluster));
        if (plan.kind === 'reject') expect(plan.shortfall).toBe(cluster.size - mostPlaceable(cluster));
      }),
      { numRuns: 300 },
    );
  });
});
