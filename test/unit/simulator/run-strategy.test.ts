import { describe, expect, it } from 'vitest';
import type { RunStrategy, VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { readVmKnobs } from '../../../src/testing/kubevirt/fault-knobs.js';
import {
  planSubresource,
  planVmAdmission,
  runStrategyOf,
  type VmAction,
} from '../../../src/testing/kubevirt/run-strategy.js';

const noKnobs = readVmKnobs(undefined).knobs;

function vm(
  runStrategy: RunStrategy | undefined,
  extra: Partial<VirtualMachine['spec']> = {},
  requests?: unknown[],
): VirtualMachine {
  return {
    metadata: { name: 'desk' },
    spec: { ...(runStrategy ? { runStrategy } : {}), ...extra },
    ...(requests ? { status: { stateChangeRequests: requests as never } } : {}),
  };
}

function vmi(phase: NonNullable<VirtualMachineInstance['status']>['phase']): VirtualMachineInstance {
  return { metadata: { name: 'desk', uid: 'vmi-uid' }, status: { phase } };
}

describe('runStrategyOf', () => {
  it.each<[Partial<VirtualMachine['spec']>, RunStrategy]>([
    [{ runStrategy: 'Manual' }, 'Manual'],
    [{ running: true }, 'Always'],
    [{ running: false }, 'Halted'],
    [{}, 'Halted'],
  ])('reads %j as %s', (spec, expected) => {
    expect(runStrategyOf({ metadata: {}, spec })).toBe(expected);
  });
});

describe('planSubresource, like virt-api', () => {
  it.each<
    [string, VmAction, VirtualMachine, VirtualMachineInstance | undefined, ReturnType<typeof planSubresource>]
  >([
    [
      'starts Halted by setting Always',
      'start',
      vm('Halted'),
      undefined,
      { kind: 'patch-spec', spec: { runStrategy: 'Always' } },
    ],
    [
      'starts spec.running by setting it',
      'start',
      vm(undefined, { running: false }),
      undefined,
      { kind: 'patch-spec', spec: { running: true } },
    ],
    [
      'starts Manual with a request',
      'start',
      vm('Manual'),
      undefined,
      { kind: 'patch-requests', stateChangeRequests: [{ action: 'Start' }] },
    ],
    [
      'restarts a finished Manual VMI with stop and start',
      'start',
      vm('Manual'),
      vmi('Succeeded'),
      {
        kind: 'patch-requests',
        stateChangeRequests: [{ action: 'Stop', uid: 'vmi-uid' }, { action: 'Start' }],
      },
    ],
    [
      'refuses a start while running',
      'start',
      vm('Halted'),
      vmi('Running'),
      { kind: 'refuse', status: 409, message: 'VM is already running' },
    ],
    [
      'refuses a start while scheduling',
      'start',
      vm('Manual'),
      vmi('Scheduling'),
      { kind: 'refuse', status: 409, message: 'VM is already running' },
    ],
    [
      'refuses a start for Always',
      'start',
      vm('Always'),
      undefined,
      { kind: 'refuse', status: 409, message: 'Always does not support manual start requests' },
    ],
    [
      'refuses a RerunOnFailure start from a failed VMI',
      'start',
      vm('RerunOnFailure'),
      vmi('Failed'),
      {
        kind: 'refuse',
        status: 409,
        message: 'RerunOnFailure does not support starting VM from failed state',
      },
    ],
    [
      'refuses to pile a start on pending requests',
      'start',
      vm('Manual', {}, [{ action: 'Start' }]),
      undefined,
      { kind: 'refuse', status: 500, message: 'unable to complete request: stop/start already underway' },
    ],
    [
      'stops Always by setting Halted',
      'stop',
      vm('Always'),
      vmi('Running'),
      { kind: 'patch-spec', spec: { runStrategy: 'Halted' } },
    ],
    [
      'stops RerunOnFailure by setting Halted',
      'stop',
      vm('RerunOnFailure'),
      vmi('Running'),
      { kind: 'patch-spec', spec: { runStrategy: 'Halted' } },
    ],
    [
      'stops spec.running by clearing it',
      'stop',
      vm(undefined, { running: true }),
      vmi('Running'),
      { kind: 'patch-spec', spec: { running: false } },
    ],
    [
      'stops Manual with a request',
      'stop',
      vm('Manual'),
      vmi('Running'),
      { kind: 'patch-requests', stateChangeRequests: [{ action: 'Stop', uid: 'vmi-uid' }] },
    ],
    [
      'lets a stop replace pending requests',
      'stop',
      vm('Manual', {}, [{ action: 'Start' }]),
      vmi('Scheduled'),
      { kind: 'patch-requests', stateChangeRequests: [{ action: 'Stop', uid: 'vmi-uid' }] },
    ],
    [
      'refuses a stop of a stopped Halted VM',
      'stop',
      vm('Halted'),
      undefined,
      { kind: 'refuse', status: 409, message: 'VM is not running' },
    ],
    [
      'refuses a stop of a stopped Manual VM',
      'stop',
      vm('Manual'),
      vmi('Succeeded'),
      { kind: 'refuse', status: 409, message: 'VM is not running' },
    ],
    [
      'refuses a stop of a Halted VM still shutting down',
      'stop',
      vm('Halted'),
      vmi('Running'),
      {
        kind: 'refuse',
        status: 409,
        message: 'Halted only supports manual stop requests with a shorter graceperiod',
      },
    ],
    [
      'restarts with stop and start',
      'restart',
      vm('Always'),
      vmi('Running'),
      {
        kind: 'patch-requests',
        stateChangeRequests: [{ action: 'Stop', uid: 'vmi-uid' }, { action: 'Start' }],
      },
    ],
    [
      'refuses a restart without a VMI',
      'restart',
      vm('Manual'),
      undefined,
      { kind: 'refuse', status: 409, message: 'VM is not running' },
    ],
    [
      'refuses a restart for Halted',
      'restart',
      vm('Halted'),
      undefined,
      { kind: 'refuse', status: 409, message: 'RunStrategy Halted does not support manual restart requests' },
    ],
  ])('%s', (_, action, machine, instance, expected) => {
    expect(planSubresource(action, machine, instance, noKnobs)).toEqual(expected);
  });

  it('answers with the injected failure before anything else', () => {
    const knobs = readVmKnobs({
      'sim.kubevirt.corral.dev/fail-start': '409 locked',
      'sim.kubevirt.corral.dev/fail-stop': 'broken',
    }).knobs;
    expect(planSubresource('start', vm('Halted'), undefined, knobs)).toEqual({
      kind: 'refuse',
      status: 409,
      message: 'locked',
    });
    expect(planSubresource('stop', vm('Always'), vmi('Running'), knobs)).toEqual({
      kind: 'refuse',
      status: 500,
      message: 'broken',
    });
    expect(planSubresource('restart', vm('Always'), vmi('Running'), knobs).kind).toBe('patch-requests');
  });
});

describe('readVmKnobs', () => {
  it('reads every knob and reports the ones it cannot read', () => {
    const reading = readVmKnobs({
      'sim.kubevirt.corral.dev/ip': '127.8.0.1',
      'sim.kubevirt.corral.dev/node': 'node-7',
      'sim.kubevirt.corral.dev/start-delay-ms': '250',
      'sim.kubevirt.corral.dev/stop-delay-ms': 'soon',
      'sim.kubevirt.corral.dev/never-ready': 'yes',
    });
    expect(reading.knobs).toMatchObject({
      ipAddress: '127.8.0.1',
      nodeName: 'node-7',
      startDelayMs: 250,
      stopDelayMs: 0,
      neverReady: false,
    });
    expect(reading.problems).toHaveLength(2);
    expect(readVmKnobs({ 'sim.kubevirt.corral.dev/ip': '300.1.1.1' }).knobs.ipAddress).toBeUndefined();
  });
});

describe('planVmAdmission', () => {
  const failing = readVmKnobs({
    'sim.kubevirt.corral.dev/fail-start': '422 the GPU feature gate is off',
  }).knobs;

  it('refuses a write that makes a VM with the fail-start knob ask to run, with the knob status and message', () => {
    const refused = { allowed: false, status: 422, message: 'the GPU feature gate is off' };
    expect(planVmAdmission(vm('Halted'), vm('Always'), failing)).toEqual(refused);
    expect(
      planVmAdmission(vm(undefined, { running: false }), vm(undefined, { running: true }), failing),
    ).toEqual(refused);
    expect(planVmAdmission(undefined, vm('Always'), failing)).toEqual(refused);
  });

  it('lets through every other write: no knob, no start, or a VM that already asks to run', () => {
    expect(planVmAdmission(vm('Halted'), vm('Always'), noKnobs)).toEqual({ allowed: true });
    expect(planVmAdmission(vm('Always'), vm('Halted'), failing)).toEqual({ allowed: true });
    expect(planVmAdmission(vm('Always'), vm('Always'), failing)).toEqual({ allowed: true });
    expect(planVmAdmission(undefined, vm('Halted'), failing)).toEqual({ allowed: true });
  });
});
