import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyMember } from '../../../src/claims/classify-member.js';
import { isGoingDown } from '../../../src/claims/plan-claim.js';
import type { MemberPower } from '../../../src/desktop-backend.js';
import type {
  RunStrategy,
  VirtualMachine,
  VirtualMachineInstance,
  VmDevices,
} from '../../../src/kubevirt-types.js';
import { classifyLegacy } from '../../../src/upgrade/classify-legacy.js';
import { powerOfVm, toVmMemberFacts } from '../../../src/vm/vm-member-facts.js';

function vm(
  status: string | undefined,
  spec: Partial<VirtualMachine['spec']> = {},
  metadata: Partial<VirtualMachine['metadata']> = {},
): VirtualMachine {
  return {
    metadata: {
      name: 'devpool-1',
      namespace: 'corral-vms',
      uid: 'uid-1',
      resourceVersion: '42',
      labels: { 'corral.dev/vdi-pool': 'devpool' },
      ...metadata,
    },
    spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } }, ...spec },
    ...(status === undefined ? {} : { status: { printableStatus: status } }),
  };
}

function vmi(
  phase: NonNullable<VirtualMachineInstance['status']>['phase'],
  devices?: VmDevices,
): VirtualMachineInstance {
  return {
    metadata: { name: 'devpool-1', namespace: 'corral-vms' },
    ...(devices ? { spec: { domain: { devices } } } : {}),
    status: { phase, nodeName: 'node-1', interfaces: [{ name: 'default', ipAddress: '127.1.0.7' }] },
  };
}

describe('powerOfVm', () => {
  it.each<[string | undefined, RunStrategy | undefined, MemberPower]>([
    ['Running', 'Always', 'running'],
    ['Running', 'Halted', 'stopping'],
    ['Starting', 'Halted', 'stopping'],
    ['Stopped', 'Halted', 'stopped'],
    ['Stopped', 'Always', 'starting'],
    ['Stopped', 'RerunOnFailure', 'starting'],
    ['Starting', 'Always', 'starting'],
    ['Stopping', 'Halted', 'stopping'],
    ['Terminating', 'Halted', 'stopping'],
    ['Provisioning', 'Halted', 'provisioning'],
    ['ErrorUnschedulable', 'Always', 'failed'],
    ['CrashLoopBackOff', 'Always', 'failed'],
    ['Paused', 'Always', 'unknown'],
    [undefined, 'Halted', 'unknown'],
  ])('a VM showing %s with run strategy %s is %s', (status, runStrategy, power) => {
    expect(powerOfVm(vm(status, runStrategy === undefined ? {} : { runStrategy }))).toBe(power);
  });

  it('counts a stopped VM with a start request pending, or the old spec.running: true, as starting', () => {
    const pending = vm('Stopped', { runStrategy: 'Manual' });
    pending.status = { printableStatus: 'Stopped', stateChangeRequests: [{ action: 'Start' }] };
    expect(powerOfVm(pending)).toBe('starting');
    expect(powerOfVm(vm('Stopped', { runStrategy: undefined, running: true }))).toBe('starting');
    expect(powerOfVm(vm('Stopped', { runStrategy: undefined, running: false }))).toBe('stopped');
  });
});

describe('toVmMemberFacts', () => {
  it('reads a running member: address, node, consoles and devices of the running instance', () => {
    const member = vm(
      'Running',
      {
        runStrategy: 'Always',
        template: {
          spec: { domain: { devices: { gpus: [{ name: 'old', deviceName: 'vendor.com/old' }] } } },
        },
      },
      {
        labels: { 'corral.dev/vdi-pool': 'devpool', 'corral.dev/vdi-ephemeral': 'true' },
        annotations: {
          'corral.dev/vdi-assigned-to': 'alice@example.com',
          'corral.dev/vdi-claimed-at': '2026-01-02T03:04:05.000000Z',
          'corral.dev/vdi-source': 'golden',
        },
      },
    );
    member.metadata.labels = { ...member.metadata.labels, 'corral.dev/vdi-assigned-to': 'alice_example.com' };
    const running = vmi('Running', {
      autoattachSerialConsole: false,
      gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A10' }],
      hostDevices: [{ name: 'nic', deviceName: 'intel.com/sriov' }],
    });
    expect(toVmMemberFacts(member, running)).toEqual({
      kind: 'vm',
      namespace: 'corral-vms',
      member: 'devpool-1',
      pool: 'devpool',
      desktopId: 'vm/corral-vms/devpool-1',
      uid: 'uid-1',
      resourceVersion: '42',
      deleting: false,
      power: 'running',
      phase: 'Running',
      address: '127.1.0.7',
      node: 'node-1',
      consoles: ['vnc'],
      devices: [
        { kind: 'gpu', name: 'gpu1', resource: 'nvidia.com/A10' },
        { kind: 'host-device', name: 'nic', resource: 'intel.com/sriov' },
      ],
      ephemeral: true,
      source: 'golden',
      presentation: {
        holder: 'alice@example.com',
        label: 'alice_example.com',
        claimedAt: '2026-01-02T03:04:05.000000Z',
      },
      previousInstance: false,
      usesLegacyRunField: false,
    });
  });

  it('reads a stopped member from its template, with no address and no previous instance', () => {
    const member = vm('Stopped', {
      template: { spec: { domain: { devices: { autoattachGraphicsDevice: false } } } },
    });
    expect(toVmMemberFacts(member, undefined)).toMatchObject({
      power: 'stopped',
      address: undefined,
      node: undefined,
      consoles: ['serial'],
      devices: [],
      ephemeral: false,
      source: undefined,
      presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
      previousInstance: false,
    });
  });

  it('tells a finished instance, or one still there after a stop, as a previous instance without an address', () => {
    expect(toVmMemberFacts(vm('Stopped'), vmi('Succeeded'))).toMatchObject({
      previousInstance: true,
      address: undefined,
    });
    expect(toVmMemberFacts(vm('Stopping'), vmi('Running'))).toMatchObject({
      power: 'stopping',
      previousInstance: true,
    });
    expect(toVmMemberFacts(vm('Starting', { runStrategy: 'Always' }), vmi('Scheduling'))).toMatchObject({
      power: 'starting',
      previousInstance: false,
    });
  });

  it('counts a started member as running once its instance runs, before the VM shows it', () => {
    expect(toVmMemberFacts(vm('Starting', { runStrategy: 'Always' }), vmi('Running'))).toMatchObject({
      power: 'running',
      phase: 'Starting',
      address: '127.1.0.7',
      previousInstance: false,
    });
    // a stop outranks an instance still running: the member is on its way down
    expect(toVmMemberFacts(vm('Stopped'), vmi('Running'))).toMatchObject({ power: 'stopped' });
  });

  it('counts a member whose instance is gone or finished as stopping while the VM still shows Running', () => {
    expect(toVmMemberFacts(vm('Running'), undefined)).toMatchObject({ power: 'stopping', phase: 'Running' });
    expect(toVmMemberFacts(vm('Running'), vmi('Succeeded'))).toMatchObject({ power: 'stopping' });
    expect(toVmMemberFacts(vm('Running', { runStrategy: 'Always' }), vmi('Running'))).toMatchObject({
      power: 'running',
    });
  });

  it('counts a member asked to stop as stopping while KubeVirt still shows it and its instance running', () => {
    expect(toVmMemberFacts(vm('Running'), vmi('Running'))).toMatchObject({
      power: 'stopping',
      phase: 'Running',
      previousInstance: true,
    });
    const legacy = vm('Running', { runStrategy: undefined, running: false });
    expect(toVmMemberFacts(legacy, vmi('Running'))).toMatchObject({ power: 'stopping' });
  });

  it('counts an instance of a member asked to stop as a previous one, whatever KubeVirt shows yet', () => {
    // a stop landed while the start was still provisioning: the instance is scheduled, the VM asks to halt
    for (const status of ['Provisioning', 'Starting', 'WaitingForVolumeBinding', 'Unknown', undefined]) {
      const facts = toVmMemberFacts(vm(status), vmi('Scheduled'));
      expect(facts.previousInstance, `${status}`).toBe(true);
      expect(isGoingDown(facts), `${status}`).toBe(true);
    }
    // a new member still provisioning its disks without an instance is not going down
    expect(isGoingDown(toVmMemberFacts(vm('Provisioning'), undefined))).toBe(false);
  });

  it('marks a member being deleted, and one still on the v0.6.0 run field', () => {
    const deleting = vm('Stopped', {}, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    expect(toVmMemberFacts(deleting, undefined).deleting).toBe(true);
    const legacy = vm('Stopped', { runStrategy: undefined, running: false });
    expect(toVmMemberFacts(legacy, undefined).usesLegacyRunField).toBe(true);
  });
});

const statuses = ['Running', 'Stopped', 'Starting', 'Stopping', 'Provisioning', 'Terminating', 'Unknown'];
const arbitraryVm = fc
  .record({
    status: fc.option(fc.constantFrom(...statuses), { nil: undefined }),
    runStrategy: fc.option(
      fc.constantFrom<RunStrategy>('Always', 'Halted', 'Manual', 'RerunOnFailure', 'Once'),
      {
        nil: undefined,
      },
    ),
    running: fc.option(fc.boolean(), { nil: undefined }),
    startPending: fc.boolean(),
    annotated: fc.option(fc.constantFrom('alice', 'bob@example.com'), { nil: undefined }),
    labeled: fc.option(fc.constantFrom('alice', 'carol', ''), { nil: undefined }),
  })
  .map(({ status, runStrategy, running, startPending, annotated, labeled }): VirtualMachine => {
    const member = vm(status, {
      runStrategy,
      ...(running === undefined ? {} : { running }),
    });
    if (runStrategy === undefined) delete member.spec.runStrategy;
    if (startPending) member.status = { ...member.status, stateChangeRequests: [{ action: 'Start' }] };
    if (annotated !== undefined) member.metadata.annotations = { 'corral.dev/vdi-assigned-to': annotated };
    if (labeled !== undefined) {
      member.metadata.labels = { ...member.metadata.labels, 'corral.dev/vdi-assigned-to': labeled };
    }
    return member;
  });

describe('the facts agree with the claim rules that read VMs today', () => {
  it('a member presented to someone, without a Lease, is free exactly when its facts say stopped', () => {
    fc.assert(
      fc.property(arbitraryVm, (member) => {
        member.metadata.annotations = { 'corral.dev/vdi-assigned-to': 'alice' };
        const state = classifyMember({ vm: member, lease: undefined, identity: 'bob', now: new Date(0) });
        expect(state.kind === 'free').toBe(toVmMemberFacts(member, undefined).power === 'stopped');
      }),
    );
  });

  it('a v0.6.0 assignment is exactly a non-empty label without the annotation', () => {
    fc.assert(
      fc.property(arbitraryVm, (member) => {
        const { presentation, usesLegacyRunField } = toVmMemberFacts(member, undefined);
        const legacy = classifyLegacy(member);
        expect(legacy.kind === 'legacy-assigned').toBe(!presentation.holder && !!presentation.label);
        if (legacy.kind !== 'not-legacy') expect(legacy.usesSpecRunning).toBe(usesLegacyRunField);
      }),
    );
  });
});
