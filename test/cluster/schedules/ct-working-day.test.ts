import { afterEach, describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import { toCtMemberFacts } from '../../../src/ct/ct-member-facts.js';
import { removalHolder } from '../../../src/keys.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { createNamespaceClock } from '../../../src/testing/kubevirt/namespace-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { caught, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { watchScaleDowns } from './scale-down-watch.js';

const cluster = useSharedCluster();
const minute = 60_000;
const image = 'ghcr.io/acme/devbox:1.4';

// weekdays in Berlin: ramp-up, peak, ramp-down; outside them (the night) the spec's size, 1
const schedule = {
  timeZone: 'Europe/Berlin',
  periods: [
    { name: 'ramp-up', days: 'mon-fri', start: '07:00', end: '09:00', buffer: 2, min: 2, max: 6 },
    { name: 'peak', days: 'mon-fri', start: '09:00', end: '17:00', buffer: '50%', min: 3, max: 6 },
    { name: 'ramp-down', days: 'mon-fri', start: '17:00', end: '19:00', buffer: 1, min: 1, max: 6 },
  ],
};

/** The pool's standing members once every one runs: each with its holder, or `undefined` when free. */
async function membersOnceRunning(ctx: VdiContext, namespace: string) {
  const pods = await waitFor(
    () => ctx.cluster.resource(podKind).in(namespace).list('corral.dev/vdi-pool=devbox'),
    {
      describe: `the member Pods of ${namespace} to run, none of them going`,
      until: (found) =>
        found.every((pod) => !pod.metadata.deletionTimestamp && toCtMemberFacts(pod).power === 'running'),
    },
  );
  const leases = await ctx.cluster.listLeases(namespace);
  return pods.map((pod) => {
    const holder = leases.find((lease) => lease.metadata.name === leaseNameFor(pod.metadata.name ?? ''))?.spec
      .holderIdentity;
    return { name: pod.metadata.name ?? '', holder: holder && holder !== removalHolder ? holder : undefined };
  });
}

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('a container pool that follows the working day', () => {
  it('warms ahead, grows through the peak, shrinks by settled free members and sleeps at night, never touching a claimed member', async () => {
    const namespace = await createTestNamespace(cluster(), 'ct-schedule-day');
    // Tuesday 24 March 2026, 05:00 in Berlin (CET, UTC+1); the node agent runs the Pods on the same clock
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace, '2026-03-24T04:00:00Z');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const ctx = vdi.context;
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, schedule } });
    const watcher = watchScaleDowns(cluster().kubeConfig, namespace, {
      path: `/api/v1/namespaces/${namespace}/pods`,
    });
    stops.push(watcher.stop);
    await watcher.ready;

    const held: string[] = [];
    const claim = async (count: number) => {
      for (let at = 0; at < count; at += 1) {
        const identity = `user-${held.length + 1}@example.com`;
        held.push((await vdi.claim({ pool: 'devbox', identity, kind: 'ct' })).member);
      }
    };
    const release = async (count: number) => {
      for (const member of held.splice(0, count)) {
        const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
        await vdi.release({ member, identity: lease?.spec.holderIdentity ?? '', kind: 'ct' });
      }
    };
    // by Berlin wall clock (UTC + 1): what users do then, and the size and free running members the pool must have
    // after a pass then and one a settle time later, worked out by hand from the schedule
    const steps: Array<[string, (() => Promise<void>) | undefined, number, number]> = [
      ['05:00', undefined, 1, 1], // night: the spec's size, its member free and running
      ['06:30', undefined, 1, 1],
      ['06:45', undefined, 2, 2], // warmed 15 minutes ahead of ramp-up (buffer 2, min 2)
      ['07:00', undefined, 2, 2], // ramp-up
      ['08:45', undefined, 3, 3], // warmed for peak's floor of 3; every free member of a container pool runs
      ['09:00', () => claim(3), 5, 2], // peak, 3 claimed: 50 % is 2 free
      ['10:00', undefined, 5, 2],
      ['11:00', undefined, 5, 2],
      ['12:00', () => claim(1), 6, 2], // 4 claimed: the cap of 6
      ['13:00', undefined, 6, 2],
      ['14:00', undefined, 6, 2],
      ['15:00', undefined, 6, 2],
      ['16:00', undefined, 6, 2],
      ['16:45', undefined, 6, 2], // ramp-down asks for less: nothing warmed
      ['17:00', undefined, 5, 1], // ramp-down: 1 free; the free members settled long ago
      ['17:30', () => release(3), 2, 1], // released members come back as fresh Pods, removed once settled
      ['18:15', undefined, 2, 1],
      ['19:00', undefined, 1, 0], // night: the claimed one, none free
      ['19:30', () => release(1), 1, 1],
      ['23:00', undefined, 1, 1],
    ];
    for (const [wall, act, size, free] of steps) {
      const at = new Date(`2026-03-24T${wall}:00+01:00`);
      await clock.set(at);
      // the holders' pages renew their claims, as the broker's do while a desktop is open
      for (const member of held) {
        const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
        await vdi.renew({ member, identity: lease?.spec.holderIdentity ?? '', kind: 'ct' });
      }
      await act?.();
      const first = await vdi.reconcileCtPool({ name: 'devbox', namespace });
      expect(first.backingOff, `the pass at ${wall}`).toBeUndefined();
      // a pass a settle time later: members freed at the step are removed by it
      await clock.set(new Date(at.getTime() + 11 * minute));
      await vdi.reconcileCtPool({ name: 'devbox', namespace });
      const members = await membersOnceRunning(ctx, namespace);
      for (const member of held) {
        expect(
          members.find((candidate) => candidate.name === member)?.holder,
          `${member} at ${wall}`,
        ).toBeDefined();
      }
      const freeRunning = members.filter((member) => member.holder === undefined).length;
      expect({ at: wall, size: members.length, free: freeRunning }).toEqual({ at: wall, size, free });
      if (wall === '12:00') {
        const status = await vdi.readPoolStatus({ name: 'devbox', namespace, kind: 'ct' });
        expect(status.schedule).toMatchObject({
          timeZone: 'Europe/Berlin',
          period: 'peak',
          warmingFor: null,
          nextChange: { at: '2026-03-24T16:00:00.000Z', period: 'ramp-down' },
          targets: { size: 6, freeRunning: 2 },
          plainSize: 1,
          underway: { cloning: 0, removing: 0 },
          failure: null,
        });
      }
    }
    const { touched, errors, memberEvents } = watcher.check();
    expect(errors).toEqual([]);
    expect(memberEvents).toBeGreaterThan(30);
    expect(touched).toEqual([]);
  }, 600_000);

  it('backs off a scheduled pool whose passes fail, reports it in its status, and goes on once they work', async () => {
    const namespace = await createTestNamespace(cluster(), 'ct-schedule-backoff');
    // Monday 30 March 2026, 10:00 in Berlin (CEST): peak
    const clock = await createNamespaceClock(cluster().kubeConfig, namespace, '2026-03-30T08:00:00Z');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const failures: unknown[] = [];
    vdi.events.on('pool-schedule-failed', (event) => failures.push(event));
    // no node has the device: every pass that must grow the pool is refused
    const gpu = { limits: { 'example.com/no-such-gpu': '1' } };
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, resources: gpu, schedule } });
    const pass = () => vdi.reconcileCtPool({ name: 'devbox', namespace });
    expect((await caught(pass())).code).toBe('INSUFFICIENT_CAPACITY');
    expect(await pass()).toMatchObject({
      created: [],
      backingOff: { attempts: 1, retryAt: '2026-03-30T08:00:30.000Z' },
    });
    await clock.advance(30_000);
    expect((await caught(pass())).code).toBe('INSUFFICIENT_CAPACITY');
    expect(await pass()).toMatchObject({
      backingOff: { attempts: 2, retryAt: '2026-03-30T08:01:30.000Z' },
    });
    expect(failures).toEqual([
      expect.objectContaining({ poolId: `ct/${namespace}/devbox`, attempts: 1 }),
      expect.objectContaining({ attempts: 2, retryAt: '2026-03-30T08:01:30.000Z' }),
    ]);
    const status = await vdi.readPoolStatus({ name: 'devbox', namespace, kind: 'ct' });
    expect(status.schedule?.failure).toMatchObject({ attempts: 2, retryAt: '2026-03-30T08:01:30.000Z' });
    expect(status.members).toEqual([]);

    // the device is dropped from the spec: an apply clears the record, and the next pass makes the peak's floor
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, schedule } });
    expect(await pass()).toMatchObject({
      created: ['devbox-1', 'devbox-2', 'devbox-3'],
      schedule: { targets: { period: 'peak', size: 3 } },
    });
    expect((await vdi.readPoolStatus({ name: 'devbox', namespace, kind: 'ct' })).schedule).toMatchObject({
      failure: null,
      targets: { size: 3 },
    });
  });
});
