import { describe, expect, it } from 'vitest';
import { phaseOfPod, powerOfPod, toCtMemberFacts } from '../../../src/ct/ct-member-facts.js';
import {
  type CtMemberRead,
  planCtPoolDelete,
  planCtReconcile,
} from '../../../src/ct-pools/plan-ct-reconcile.js';
import type { LeaseObject, PodObject } from '../../../src/kube-objects.js';
import { parsePoolSchedule } from '../../../src/pool-schedule.js';

const now = new Date('2026-01-01T12:00:00.000Z');
const image = 'ghcr.io/acme/devbox:1.4';

function pod(
  name: string,
  status: PodObject['status'] = { phase: 'Pending' },
  extra: Partial<PodObject['metadata']> = {},
): PodObject {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: { 'corral.dev/vdi-pool': 'devbox', 'corral.dev/vdi-kind': 'ct' },
      annotations: { 'corral.dev/vdi-source': image },
      ...extra,
    },
    spec: { containers: [{ name: 'desktop', image }] },
    status,
  };
}

function member(
  name: string,
  status?: PodObject['status'],
  objects: Partial<CtMemberRead> = {},
): CtMemberRead {
  return {
    member: name,
    pod: toCtMemberFacts(pod(name, status)),
    service: true,
    homeClaim: false,
    ...objects,
  };
}

function held(name: string, holder = 'alice@example.com'): LeaseObject {
  return {
    metadata: { name: `corral-vdi-${name}`, resourceVersion: '5' },
    spec: {
      holderIdentity: holder,
      acquireTime: now.toISOString(),
      renewTime: now.toISOString(),
      leaseDurationSeconds: 3600,
    },
  };
}

const plan = (input: Partial<Parameters<typeof planCtReconcile>[0]>) =>
  planCtReconcile({
    pool: 'devbox',
    size: 2,
    home: false,
    members: [],
    leases: [],
    taken: new Set(),
    now,
    ...input,
  });

describe('planCtReconcile', () => {
  it('creates the missing members under the lowest free names, skipping names the namespace uses', () => {
    expect(plan({ size: 3, members: [member('devbox-2')], taken: new Set(['devbox-1']) })).toEqual({
      steps: [
        { kind: 'create', member: 'devbox-3' },
        { kind: 'create', member: 'devbox-4' },
      ],
      newPods: 2,
    });
  });

  it('does nothing for a pool at its size whose members run the spec image', () => {
    expect(plan({ members: [member('devbox-1'), member('devbox-2')] })).toEqual({ steps: [], newPods: 0 });
  });

  it('completes a member a pass left half-made: its Service, its home claim, its Pod', () => {
    const halfMade = { member: 'devbox-2', pod: undefined, service: false, homeClaim: true };
    expect(
      plan({ home: true, members: [member('devbox-1', undefined, { homeClaim: true }), halfMade] }).steps,
    ).toEqual([{ kind: 'complete', member: 'devbox-2', pod: true, service: true, homeClaim: false }]);
  });

  it('never makes the Pod of a held member whose Pod is gone: its release makes it', () => {
    const steps = plan({
      members: [member('devbox-1'), { member: 'devbox-2', pod: undefined, service: true, homeClaim: false }],
      leases: [held('devbox-2')],
    }).steps;
    expect(steps).toEqual([{ kind: 'skip', member: 'devbox-2', reason: 'claimed' }]);
  });

  it('replaces a free member whose container ended, or that runs another image in a roll-out, and never a held one', () => {
    const old = {
      ...member('devbox-2'),
      pod: { ...toCtMemberFacts(pod('devbox-2')), source: 'ghcr.io/acme/devbox:1.3' },
    };
    const members = [
      member('devbox-1', { phase: 'Failed' }),
      old,
      member('devbox-3', { phase: 'Succeeded' }),
    ];
    const leases = [held('devbox-3')];
    const rollout = { to: image, maxUnavailable: 1, startedAt: now.toISOString(), rebuilding: [] };
    expect(plan({ size: 3, members, leases }).steps).not.toContainEqual(
      expect.objectContaining({ member: 'devbox-2' }),
    );
    const result = plan({ size: 3, members, leases, rollout });
    expect(result.rollout?.journal).toEqual(['devbox-2']);
    expect({ steps: result.steps, newPods: result.newPods }).toEqual({
      steps: [
        { kind: 'replace', member: 'devbox-1', uid: 'uid-devbox-1', reason: 'finished' },
        { kind: 'replace', member: 'devbox-2', uid: 'uid-devbox-2', reason: 'image' },
        { kind: 'skip', member: 'devbox-3', reason: 'claimed' },
      ],
      newPods: 2,
    });
  });

  it('counts a member a removal is taking away (its Pod going, its Service gone) neither in the size nor for removal', () => {
    const leaving: CtMemberRead = {
      member: 'devbox-3',
      pod: toCtMemberFacts(pod('devbox-3', undefined, { deletionTimestamp: now.toISOString() })),
      service: false,
      homeClaim: false,
    };
    expect(plan({ size: 2, members: [member('devbox-1'), member('devbox-2'), leaving] }).steps).toEqual([
      { kind: 'skip', member: 'devbox-3', reason: 'deleting' },
    ]);
    expect(plan({ size: 1, members: [member('devbox-1'), member('devbox-2'), leaving] }).steps).toEqual([
      { kind: 'remove', member: 'devbox-2' },
      { kind: 'skip', member: 'devbox-3', reason: 'deleting' },
    ]);
  });

  it('shrinks by the highest free members and keeps held ones, even past the size', () => {
    const members = ['devbox-1', 'devbox-2', 'devbox-3', 'devbox-10'].map((name) => member(name));
    expect(plan({ size: 1, members, leases: [held('devbox-10'), held('devbox-1')] }).steps).toEqual([
      { kind: 'skip', member: 'devbox-1', reason: 'claimed' },
      { kind: 'remove', member: 'devbox-2' },
      { kind: 'remove', member: 'devbox-3' },
      { kind: 'skip', member: 'devbox-10', reason: 'claimed' },
    ]);
  });

  it('drops a removal Lease a dead pass left on a member it keeps, and names a Lease-only member taken', () => {
    const result = plan({
      size: 2,
      members: [member('devbox-1')],
      leases: [held('devbox-1', 'corral-vdi/resize'), held('devbox-2')],
    });
    expect(result.steps).toEqual([
      { kind: 'drop-removal', member: 'devbox-1' },
      { kind: 'create', member: 'devbox-3' },
    ]);
  });
});

describe('planCtPoolDelete', () => {
  it('refuses while members are held, naming them, unless forced', () => {
    const members = [member('devbox-1'), member('devbox-2')];
    expect(
      planCtPoolDelete({ pool: 'devbox', members, leases: [held('devbox-2')], force: false, now }),
    ).toMatchObject({
      kind: 'reject',
      code: 'POOL_IN_USE',
      claimed: ['devbox-2'],
    });
    expect(
      planCtPoolDelete({ pool: 'devbox', members, leases: [held('devbox-2')], force: true, now }),
    ).toEqual({
      kind: 'delete',
      members: ['devbox-1', 'devbox-2'],
      forced: true,
    });
  });

  it('deletes a member whose Pod a shrink is still deleting, since no Lease holds it', () => {
    const going = toCtMemberFacts(
      pod('devbox-2', { phase: 'Running' }, { deletionTimestamp: now.toISOString() }),
    );
    const members = [member('devbox-1'), member('devbox-2', undefined, { pod: going })];
    expect(planCtPoolDelete({ pool: 'devbox', members, leases: [], force: false, now })).toEqual({
      kind: 'delete',
      members: ['devbox-1', 'devbox-2'],
      forced: false,
    });
    expect(
      planCtPoolDelete({ pool: 'devbox', members, leases: [held('devbox-2')], force: false, now }),
    ).toMatchObject({ kind: 'reject', claimed: ['devbox-2'] });
  });
});

describe('the facts of a member Pod', () => {
  it.each([
    [{ phase: 'Pending' }, undefined, 'provisioning', 'Pending'],
    [
      {
        phase: 'Pending',
        containerStatuses: [{ name: 'desktop', state: { waiting: { reason: 'ContainerCreating' } } }],
      },
      'node-1',
      'starting',
      'ContainerCreating',
    ],
    [
      {
        phase: 'Pending',
        containerStatuses: [{ name: 'desktop', state: { waiting: { reason: 'ImagePullBackOff' } } }],
      },
      'node-1',
      'failed',
      'ImagePullBackOff',
    ],
    [
      { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] },
      'node-1',
      'starting',
      'NotReady',
    ],
    [{ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, 'node-1', 'running', 'Running'],
    [{ phase: 'Succeeded' }, 'node-1', 'stopped', 'Succeeded'],
    [{ phase: 'Failed' }, 'node-1', 'failed', 'Failed'],
  ] as const)('reads %j on node %s as %s (%s)', (status, node, power, phase) => {
    const read = pod('devbox-1', status as PodObject['status']);
    if (node && read.spec) read.spec.nodeName = node;
    expect([powerOfPod(read), phaseOfPod(read)]).toEqual([power, phase]);
  });

  it('reads a Pod being deleted as stopping, and offers only the terminal of an ephemeral member', () => {
    const facts = toCtMemberFacts(
      pod('devbox-1', { phase: 'Running' }, { deletionTimestamp: now.toISOString() }),
    );
    expect(facts).toMatchObject({
      kind: 'ct',
      desktopId: 'ct/ns/devbox-1',
      pool: 'devbox',
      power: 'stopping',
      phase: 'Terminating',
      deleting: true,
      consoles: ['terminal'],
      ephemeral: true,
      source: image,
      usesLegacyRunField: false,
    });
  });
});

describe('planCtReconcile for a pool with a schedule', () => {
  // Thursday 1 January 2026, 12:00 UTC is in peak; 20:00 is the night
  const schedule = parsePoolSchedule({
    timeZone: 'UTC',
    periods: [{ name: 'peak', days: 'mon-sun', start: '08:00', end: '18:00', buffer: 2, min: 2, max: 4 }],
  });
  const running: PodObject['status'] = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
  const at = (iso: string) => new Date(iso);
  const night = at('2026-01-01T20:00:00.000Z');
  const settled = new Map(
    ['devbox-1', 'devbox-2', 'devbox-3', 'devbox-4'].map((name) => [name, at('2026-01-01T19:45:00.000Z')]),
  );
  const waiter: LeaseObject = {
    metadata: {
      name: 'corral-vdi-wait-ct-devbox-1a2b3c',
      labels: {
        'corral.dev/vdi-pool': 'devbox',
        'corral.dev/vdi-kind': 'ct',
        'corral.dev/vdi-waiter': '1a2b3c',
      },
    },
    spec: {
      holderIdentity: 'carol@example.com',
      acquireTime: now.toISOString(),
      renewTime: now.toISOString(),
      leaseDurationSeconds: 60,
    },
  };
  const scheduled = (input: Partial<Parameters<typeof planCtReconcile>[0]>, freeSince = new Map()) =>
    plan({ size: 1, schedule: { schedule, minReady: 0, freeSince }, ...input });
  const members = (count: number) =>
    Array.from({ length: count }, (_, index) => member(`devbox-${index + 1}`, running));

  it('grows to the claimed members and the period buffer, and marks the free ones seen free now', () => {
    const result = scheduled({ members: members(2), leases: [held('devbox-1')] });
    expect(result.steps).toEqual([
      { kind: 'skip', member: 'devbox-1', reason: 'claimed' },
      { kind: 'mark-free', member: 'devbox-2' },
      { kind: 'create', member: 'devbox-3' },
    ]);
    expect(result.schedule).toMatchObject({
      targets: { period: 'peak', size: 3, freeRunning: 2 },
      claimed: 1,
      waiters: 0,
      settling: 0,
    });
  });

  it('counts each live waiter as demand, up to the cap', () => {
    const result = scheduled({ members: members(2), leases: [held('devbox-1'), waiter] }, settled);
    expect(result.schedule).toMatchObject({ targets: { size: 4 }, claimed: 1, waiters: 1 });
    expect(result.steps.filter((step) => step.kind === 'create')).toHaveLength(2);
  });

  it('at night shrinks to the plain size by free members settled for ten minutes, highest first', () => {
    expect(scheduled({ members: members(3), now: night }, settled).steps).toEqual([
      { kind: 'remove', member: 'devbox-2' },
      { kind: 'remove', member: 'devbox-3' },
    ]);
  });

  it('leaves free members that have not settled, counting them as settling', () => {
    const recent = new Map([...settled].map(([name]) => [name, at('2026-01-01T19:55:00.000Z')]));
    const result = scheduled({ members: members(3), now: night }, recent);
    expect(result.steps).toEqual([]);
    expect(result.schedule?.settling).toBe(2);
  });

  it('never removes a claimed member, and takes the mark off one claimed since it was marked', () => {
    const leases = [held('devbox-2'), held('devbox-3')].map((lease) => ({
      ...lease,
      spec: { ...lease.spec, renewTime: night.toISOString() },
    }));
    expect(scheduled({ members: members(3), leases, now: night }, settled).steps).toEqual([
      { kind: 'remove', member: 'devbox-1' },
      { kind: 'skip', member: 'devbox-2', reason: 'claimed' },
      { kind: 'skip', member: 'devbox-3', reason: 'claimed' },
      { kind: 'unmark-free', member: 'devbox-2' },
      { kind: 'unmark-free', member: 'devbox-3' },
    ]);
  });

  it('keeps the free members the period asks for, however long they have been free', () => {
    const morning = new Map([...settled].map(([name]) => [name, at('2026-01-01T11:45:00.000Z')]));
    const result = scheduled({ members: members(4), leases: [held('devbox-1')] }, morning);
    expect(result.schedule?.targets).toMatchObject({ size: 3, freeRunning: 2 });
    expect(result.steps).toEqual([
      { kind: 'skip', member: 'devbox-1', reason: 'claimed' },
      { kind: 'remove', member: 'devbox-4' },
      { kind: 'unmark-free', member: 'devbox-1' },
    ]);
  });

  it('follows the named zone across the night its clocks go forward: 06:45 in Berlin warms for ramp-up either side', () => {
    const berlin = parsePoolSchedule({
      timeZone: 'Europe/Berlin',
      periods: [
        { name: 'ramp-up', days: 'mon-sun', start: '07:00', end: '09:00', buffer: 2, min: 2, max: 6 },
      ],
    });
    const targetsAt = (iso: string) =>
      plan({
        size: 1,
        members: members(1),
        schedule: { schedule: berlin, minReady: 0, freeSince: new Map() },
        now: at(iso),
      }).schedule?.targets;
    // Saturday 06:45 CET is 05:45 UTC; Sunday 06:45 CEST, after the change, is 04:45 UTC
    expect(targetsAt('2026-03-28T05:45:00.000Z')).toMatchObject({
      period: undefined,
      warmingFor: 'ramp-up',
      size: 2,
    });
    expect(targetsAt('2026-03-29T04:45:00.000Z')).toMatchObject({
      period: undefined,
      warmingFor: 'ramp-up',
      size: 2,
    });
    // Sunday 05:45 UTC is already 07:45 CEST: in ramp-up
    expect(targetsAt('2026-03-29T05:45:00.000Z')).toMatchObject({
      period: 'ramp-up',
      warmingFor: undefined,
      size: 2,
    });
    expect(targetsAt('2026-03-28T04:45:00.000Z')).toMatchObject({
      period: undefined,
      warmingFor: undefined,
      size: 1,
    });
  });
});
