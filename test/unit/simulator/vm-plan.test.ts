import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunStrategy, VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { readVmKnobs } from '../../../src/testing/kubevirt/fault-knobs.js';
import { IpPool, parseIpRange } from '../../../src/testing/kubevirt/ip-pool.js';
import { planVm, type VmFacts } from '../../../src/testing/kubevirt/vm-plan.js';

const noKnobs = readVmKnobs(undefined).knobs;
type Phase = NonNullable<VirtualMachineInstance['status']>['phase'];

function vm(runStrategy: RunStrategy, status: VirtualMachine['status'] = {}): VirtualMachine {
  return {
    metadata: { name: 'desk', namespace: 'ns', uid: 'vm-uid', resourceVersion: '1' },
    spec: {
      runStrategy,
      template: { spec: { domain: { devices: { gpus: [{ name: 'g', deviceName: 'nvidia.com/A10' }] } } } },
    },
    status,
  };
}

function vmi(phase: Phase | undefined, status: Record<string, unknown> = {}): VirtualMachineInstance {
  return {
    metadata: { name: 'desk', namespace: 'ns', uid: 'vmi-uid' },
    status: { ...(phase ? { phase } : {}), ...status },
  };
}

const running = vmi('Running', { nodeName: 'node-1', interfaces: [{ ipAddress: '127.1.0.1' }] });

function facts(over: Partial<VmFacts>): VmFacts {
  return {
    vm: vm('Halted'),
    vmi: undefined,
    knobs: noKnobs,
    restoring: false,
    nodeName: 'node-1',
    ipAddress: '127.1.0.1',
    now: 10_000,
    startDueAt: undefined,
    stopDueAt: undefined,
    ...over,
  };
}

describe('planVm', () => {
  it.each<[string, Partial<VmFacts>, string, Record<string, unknown>?]>([
    ['creates the VMI of an Always VM', { vm: vm('Always') }, 'create-vmi'],
    [
      'schedules a new VMI',
      { vm: vm('Always'), vmi: vmi(undefined) },
      'write-vmi-status',
      { phase: 'Scheduling' },
    ],
    [
      'places a scheduling VMI on its node',
      { vm: vm('Always'), vmi: vmi('Scheduling') },
      'write-vmi-status',
      { phase: 'Scheduled', nodeName: 'node-1' },
    ],
    [
      'runs a scheduled VMI with its address',
      { vm: vm('Always'), vmi: vmi('Scheduled') },
      'write-vmi-status',
      { phase: 'Running' },
    ],
    [
      'reports a running VM as ready',
      { vm: vm('Always'), vmi: running },
      'write-vm-status',
      { printableStatus: 'Running', ready: true, created: true },
    ],
    ['deletes the VMI of a Halted VM', { vm: vm('Halted'), vmi: running }, 'delete-vmi'],
    [
      'reports a stopped VM',
      { vm: vm('Halted') },
      'write-vm-status',
      { printableStatus: 'Stopped', ready: false, created: false },
    ],
    [
      'leaves a Manual VM alone without a request',
      { vm: vm('Manual') },
      'write-vm-status',
      { printableStatus: 'Stopped' },
    ],
    [
      'starts a Manual VM on a start request',
      { vm: vm('Manual', { stateChangeRequests: [{ action: 'Start' }] }) },
      'create-vmi',
    ],
    [
      'consumes a start request once the VMI runs',
      {
        vm: vm('Manual', {
          stateChangeRequests: [{ action: 'Start' }],
          printableStatus: 'Running',
          ready: true,
          created: true,
        }),
        vmi: running,
      },
      'write-vm-status',
      { stateChangeRequests: null },
    ],
    [
      'stops a Manual VM on a stop request',
      { vm: vm('Manual', { stateChangeRequests: [{ action: 'Stop', uid: 'vmi-uid' }] }), vmi: running },
      'delete-vmi',
    ],
    [
      'drops a stop request for a VMI that is gone',
      {
        vm: vm('Always', { stateChangeRequests: [{ action: 'Stop', uid: 'old' }, { action: 'Start' }] }),
        vmi: running,
      },
      'write-vm-status',
      { stateChangeRequests: [{ action: 'Start' }] },
    ],
    ['replaces a finished VMI of an Always VM', { vm: vm('Always'), vmi: vmi('Succeeded') }, 'delete-vmi'],
    [
      'keeps a finished VMI of a RerunOnFailure VM that shut down',
      { vm: vm('RerunOnFailure'), vmi: vmi('Succeeded') },
      'write-vm-status',
      { printableStatus: 'Stopped' },
    ],
    [
      'replaces a failed VMI of a RerunOnFailure VM',
      { vm: vm('RerunOnFailure'), vmi: vmi('Failed') },
      'delete-vmi',
    ],
    [
      'holds a restoring VM back',
      { vm: vm('Always'), restoring: true },
      'write-vm-status',
      { printableStatus: 'Provisioning' },
    ],
    [
      'keeps a never-ready VMI scheduling',
      { vm: vm('Always'), vmi: vmi('Scheduling'), knobs: { ...noKnobs, neverReady: true } },
      'write-vm-status',
      { printableStatus: 'Starting', ready: false },
    ],
    [
      'stops at Scheduled without an address',
      { vm: vm('Always'), vmi: vmi('Scheduled'), ipAddress: undefined },
      'write-vm-status',
      { printableStatus: 'Starting' },
    ],
    [
      'moves a running VMI to its new address',
      { vm: vm('Always'), vmi: running, ipAddress: '127.9.9.9' },
      'write-vmi-status',
      { phase: 'Running' },
    ],
  ])('%s', (_, over, kind, status) => {
    const plan = planVm(facts(over));
    expect(plan.step.kind).toBe(kind);
    if (status) expect((plan.step as { status?: unknown }).status).toMatchObject(status);
  });

  it('builds the VMI from the template, owned by the VM', () => {
    const plan = planVm(facts({ vm: vm('Always') }));
    expect(plan.step).toMatchObject({
      kind: 'create-vmi',
      vmi: {
        metadata: {
          name: 'desk',
          namespace: 'ns',
          labels: { 'vm.kubevirt.io/name': 'desk' },
          ownerReferences: [{ kind: 'VirtualMachine', uid: 'vm-uid' }],
        },
        spec: { domain: { devices: { gpus: [{ name: 'g', deviceName: 'nvidia.com/A10' }] } } },
      },
    });
  });

  it('waits out a start delay, showing Starting, then creates the VMI', () => {
    const knobs = { ...noKnobs, startDelayMs: 500 };
    const first = planVm(
      facts({
        vm: vm('Always', {
          printableStatus: 'Starting',
          ready: false,
          created: false,
          conditions: [{ type: 'Ready', status: 'False' }],
        }),
        knobs,
      }),
    );
    expect(first).toMatchObject({ step: { kind: 'none' }, startDueAt: 10_500, wakeAt: 10_500 });
    const later = planVm(facts({ vm: vm('Always'), knobs, startDueAt: 10_500, now: 10_500 }));
    expect(later.step.kind).toBe('create-vmi');
    expect(later.startDueAt).toBeUndefined();
  });

  it('waits out a stop delay, showing Stopping, then deletes the VMI', () => {
    const knobs = { ...noKnobs, stopDelayMs: 500 };
    const first = planVm(facts({ vm: vm('Halted'), vmi: running, knobs }));
    expect(first).toMatchObject({
      step: { kind: 'write-vm-status', status: { printableStatus: 'Stopping' } },
      stopDueAt: 10_500,
    });
    const later = planVm(facts({ vm: vm('Halted'), vmi: running, knobs, stopDueAt: 10_500, now: 10_600 }));
    expect(later.step).toEqual({ kind: 'delete-vmi', uid: 'vmi-uid' });
  });

  it('never creates a VMI next to an existing one, nor deletes one that a running strategy wants', () => {
    const strategies: RunStrategy[] = ['Always', 'Halted', 'Manual', 'RerunOnFailure', 'Once'];
    const phases: Array<Phase | undefined> = [
      undefined,
      'Scheduling',
      'Scheduled',
      'Running',
      'Succeeded',
      'Failed',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...strategies),
        fc.option(fc.constantFrom(...phases), { nil: null }),
        fc.boolean(),
        (strategy, phase, restoring) => {
          const instance = phase === null ? undefined : vmi(phase);
          const plan = planVm(facts({ vm: vm(strategy), vmi: instance, restoring }));
          if (instance) expect(plan.step.kind).not.toBe('create-vmi');
          const active = instance && phase !== 'Succeeded' && phase !== 'Failed';
          if (active && (strategy === 'Always' || strategy === 'RerunOnFailure'))
            expect(plan.step.kind).not.toBe('delete-vmi');
          if (restoring) expect(plan.step.kind).not.toBe('create-vmi');
        },
      ),
    );
  });
});

describe('IpPool', () => {
  it('hands distinct keys distinct addresses, keeps them stable, and reuses released ones', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 70 }),
        (keys) => {
          const pool = new IpPool(parseIpRange('127.3.0.0/26'));
          const addresses = keys.map((key) => pool.addressOf(key));
          const handed = addresses.filter((address): address is string => address !== undefined);
          expect(new Set(handed).size).toBe(handed.length);
          expect(handed.length).toBe(Math.min(keys.length, 62));
          keys.forEach((key, index) => {
            if (addresses[index]) expect(pool.addressOf(key)).toBe(addresses[index]);
          });
          const first = keys[0] as string;
          pool.release(first);
          if (keys.length >= 62) expect(pool.addressOf('newcomer')).toBe(addresses[0]);
        },
      ),
    );
  });

  it('covers thousands of VMs in the default range, never handing out 127.0.0.1', () => {
    const pool = new IpPool(parseIpRange('127.1.0.0/16'));
    const handed = new Set(Array.from({ length: 3000 }, (_, index) => pool.addressOf(`ns/vm-${index}`)));
    expect(handed.size).toBe(3000);
    expect(handed.has('127.1.0.0')).toBe(false);
    expect(new IpPool(parseIpRange('127.0.0.0/30')).addressOf('a')).toBe('127.0.0.2');
  });

  it('keeps an address seen on an existing VMI for its key', () => {
    const pool = new IpPool(parseIpRange('127.1.0.0/16'));
    pool.reserve('ns/old', '127.1.0.1');
    expect(pool.addressOf('ns/new')).toBe('127.1.0.2');
    expect(pool.addressOf('ns/old')).toBe('127.1.0.1');
  });

  it.each(['10.0.0.0/8', '127.1.0.0', '127.1.0.0/31', 'nonsense/16', '127.1.0.0/4'])(
    'refuses the range %s',
    (range) => {
      expect(() => parseIpRange(range)).toThrow(
        expect.objectContaining({ name: 'VdiError', code: 'INVALID_INPUT' }),
      );
    },
  );
});
