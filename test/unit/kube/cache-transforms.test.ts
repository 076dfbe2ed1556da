import { describe, expect, it } from 'vitest';
import { storedLease, storedVm, storedVmi } from '../../../src/kube/cache-transforms.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { toVmMemberFacts } from '../../../src/vm/vm-member-facts.js';

const managedFields = [{ manager: 'virt-controller', operation: 'Update', fieldsV1: { 'f:status': {} } }];

// a running GPU desktop as KubeVirt shows it, with what the SDK never reads of it
const vm = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: {
    name: 'gpupool-1',
    namespace: 'corral-vms',
    uid: 'u-1',
    resourceVersion: '42',
    labels: { 'corral.dev/vdi-pool': 'gpupool', 'corral.dev/vdi-assigned-to': 'alice' },
    annotations: {
      'corral.dev/vdi-assigned-to': 'alice@example.com',
      'corral.dev/vdi-session-id': 's-1',
      'kubectl.kubernetes.io/last-applied-configuration': '{"a very long copy":"of the object"}',
    },
    managedFields,
  },
  spec: {
    runStrategy: 'Always',
    dataVolumeTemplates: [{ metadata: { name: 'gpupool-1-root' } }],
    template: {
      metadata: { labels: { 'kubevirt.io/domain': 'gpupool-1' } },
      spec: {
        domain: {
          cpu: { cores: 4 },
          devices: {
            gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10', virtualGPUOptions: { display: {} } }],
            hostDevices: [{ name: 'nic', deviceName: 'intel.com/x710' }],
            autoattachSerialConsole: false,
            disks: [{ name: 'rootdisk', disk: { bus: 'virtio' } }],
          },
        },
        volumes: [{ name: 'rootdisk', dataVolume: { name: 'gpupool-1-root' } }],
      },
    },
  },
  status: {
    printableStatus: 'Running',
    ready: true,
    conditions: [{ type: 'Ready', status: 'True' }],
    volumeSnapshotStatuses: [{ name: 'rootdisk', enabled: false }],
  },
} as unknown as VirtualMachine;

const vmi = {
  metadata: { name: 'gpupool-1', namespace: 'corral-vms', resourceVersion: '41', managedFields },
  spec: {
    domain: {
      devices: { gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10' }], autoattachSerialConsole: false },
    },
  },
  status: {
    phase: 'Running',
    nodeName: 'node-7',
    interfaces: [{ name: 'default', ipAddress: '10.0.0.7', mac: '02:00:00:00:00:07', infoSource: 'domain' }],
    guestOSInfo: { name: 'Ubuntu' },
  },
} as unknown as VirtualMachineInstance;

describe('what the watch caches keep', () => {
  it('keeps an object it kept as it is: a list cuts each object down as its page arrives, and the cache again', () => {
    expect(storedVm(storedVm(vm))).toEqual(storedVm(vm));
    expect(storedVmi(storedVmi(vmi))).toEqual(storedVmi(vmi));
  });

  it('tells the same member facts as the whole VM and VMI', () => {
    expect(toVmMemberFacts(storedVm(vm), storedVmi(vmi))).toEqual(toVmMemberFacts(vm, vmi));
    const stopped = { ...vm, spec: { ...vm.spec, runStrategy: 'Halted' as const } };
    expect(toVmMemberFacts(storedVm(stopped), undefined)).toEqual(toVmMemberFacts(stopped, undefined));
  });

  it('drops managedFields, kubectl’s copy, and the template and status a member is not read from', () => {
    const kept = storedVm(vm);
    expect(kept.metadata).not.toHaveProperty('managedFields');
    expect(kept.metadata.annotations).toEqual({
      'corral.dev/vdi-assigned-to': 'alice@example.com',
      'corral.dev/vdi-session-id': 's-1',
    });
    expect(kept.spec).toEqual({
      runStrategy: 'Always',
      template: {
        spec: {
          domain: {
            devices: {
              gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10' }],
              hostDevices: [{ name: 'nic', deviceName: 'intel.com/x710' }],
              autoattachSerialConsole: false,
            },
          },
        },
      },
    });
    expect(kept.status).toEqual({ printableStatus: 'Running' });
    expect(storedVmi(vmi).status).toEqual({
      phase: 'Running',
      nodeName: 'node-7',
      interfaces: [{ name: 'default', ipAddress: '10.0.0.7' }],
    });
    expect(storedVmi(vmi).metadata).not.toHaveProperty('managedFields');
  });

  it('keeps all of a Lease but managedFields, since a renewal writes a cached Lease back whole', () => {
    const lease = {
      metadata: {
        name: 'corral-vdi-gpupool-1',
        resourceVersion: '43',
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'o-1' }],
        managedFields,
      },
      spec: { holderIdentity: 'alice@example.com', leaseDurationSeconds: 3600 },
    };
    const { managedFields: _, ...metadata } = lease.metadata;
    expect(storedLease(lease)).toEqual({ metadata, spec: lease.spec });
  });
});
