import { describe, expect, it } from 'vitest';
import { classifyDevice, readDeviceNeeds, uncountedDevicesOf } from '../../../src/capacity/device-needs.js';
import { parseDeviceCount } from '../../../src/capacity/parse-quantity.js';
import type { PermittedHostDevices, VirtualMachine } from '../../../src/kubevirt-types.js';

const permitted: PermittedHostDevices = {
  pciHostDevices: [
    { resourceName: 'nvidia.com/GA102GL_A10' },
    { resourceName: 'nvidia.com/TU104GL_T4', externalResourceProvider: true },
  ],
  mediatedDevices: [
    { resourceName: 'nvidia.com/NVIDIA_A10-4Q' },
    { resourceName: 'nvidia.com/GRID_T4-2Q', externalResourceProvider: true },
  ],
  usb: [{ resourceName: 'kubevirt.io/yubikey' }],
};

describe('classifyDevice', () => {
  it.each([
    ['nvidia.com/GA102GL_A10', 'pci-passthrough'],
    ['nvidia.com/TU104GL_T4', 'external-provider'],
    ['nvidia.com/NVIDIA_A10-4Q', 'mediated'],
    ['nvidia.com/GRID_T4-2Q', 'external-provider'],
    ['kubevirt.io/yubikey', 'usb'],
    ['example.com/unknown', 'not-permitted'],
  ] as const)('classifies %s as %s', (resource, kind) => {
    expect(classifyDevice(resource, permitted)).toBe(kind);
  });

  it('permits nothing when the KubeVirt CR lists no devices', () => {
    expect(classifyDevice('nvidia.com/GA102GL_A10', {})).toBe('not-permitted');
  });
});

describe('readDeviceNeeds', () => {
  it('groups the GPU and host device entries by deviceName, sorted by resource', () => {
    const vm: VirtualMachine = {
      metadata: { name: 'golden' },
      spec: {
        template: {
          spec: {
            domain: {
              devices: {
                gpus: [
                  { name: 'gpu1', deviceName: 'nvidia.com/NVIDIA_A10-4Q' },
                  { name: 'gpu2', deviceName: 'nvidia.com/NVIDIA_A10-4Q' },
                ],
                hostDevices: [{ name: 'key', deviceName: 'kubevirt.io/yubikey' }],
              },
            },
          },
        },
      },
    };
    expect(readDeviceNeeds(vm, permitted)).toEqual([
      { resource: 'kubevirt.io/yubikey', perMember: 1, kind: 'usb', requestedBy: ['hostDevices/key'] },
      {
        resource: 'nvidia.com/NVIDIA_A10-4Q',
        perMember: 2,
        kind: 'mediated',
        requestedBy: ['gpus/gpu1', 'gpus/gpu2'],
      },
    ]);
  });

  it('finds no needs in a VM without a template', () => {
    expect(readDeviceNeeds({ metadata: { name: 'bare' }, spec: {} }, permitted)).toEqual([]);
  });
});

describe('uncountedDevicesOf', () => {
  function withNetworking(interfaces: unknown[], networks: unknown[]): VirtualMachine {
    return {
      metadata: { name: 'golden' },
      spec: {
        template: {
          spec: {
            domain: {
              devices: {
                gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/GA102GL_A10' }],
                interfaces,
              },
            },
            networks,
          },
        },
      },
    };
  }

  it.each([
    {
      name: 'an SR-IOV interface on a Multus network names the NetworkAttachmentDefinition that holds its resource',
      interfaces: [
        { name: 'default', masquerade: {} },
        { name: 'fast', sriov: {} },
      ],
      networks: [
        { name: 'default', pod: {} },
        { name: 'fast', multus: { networkName: 'net-ns/sriov-vf' } },
      ],
      uncounted: [
        {
          entry: 'interfaces/fast',
          reason: expect.stringMatching(
            /NetworkAttachmentDefinition "net-ns\/sriov-vf".*k8s\.v1\.cni\.cncf\.io\/resourceName annotation/,
          ),
        },
      ],
    },
    {
      name: 'an SR-IOV interface without a network of its name says that nothing names its resource',
      interfaces: [{ name: 'fast', sriov: {} }],
      networks: [],
      uncounted: [{ entry: 'interfaces/fast', reason: expect.stringMatching(/without a Multus network/) }],
    },
    {
      name: 'bridge and masquerade interfaces take no device',
      interfaces: [
        { name: 'default', masquerade: {} },
        { name: 'lan', bridge: {} },
      ],
      networks: [
        { name: 'default', pod: {} },
        { name: 'lan', multus: { networkName: 'lan' } },
      ],
      uncounted: [],
    },
  ])('$name', ({ interfaces, networks, uncounted }) => {
    const vm = withNetworking(interfaces, networks);
    expect(uncountedDevicesOf(vm)).toEqual(uncounted);
    // the counted GPU is unaffected
    expect(readDeviceNeeds(vm, permitted).map((need) => need.resource)).toEqual(['nvidia.com/GA102GL_A10']);
  });
});

describe('parseDeviceCount', () => {
  it.each([
    ['4', 4],
    ['0', 0],
    ['1k', 1000],
    ['1.1k', 1100],
    ['2Ki', 2048],
    ['1e3', 1000],
    ['1500m', 1],
    ['+3', 3],
    [' 7 ', 7],
    ['-2', 0],
    ['four', 0],
    ['', 0],
    [undefined, 0],
  ] as const)('reads %j as %i devices', (text, count) => {
    expect(parseDeviceCount(text)).toBe(count);
  });
});
