import { afterEach, describe, expect, it } from 'vitest';
import { removalHolder } from '../../../src/keys.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { readSpares } from '../../../src/spares/keep-spares.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import type { WatchedObject } from '../../chaos/watch-path.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { watchScaleDowns } from './scale-down-watch.js';

const cluster = useSharedCluster();
const minute = 60_000;

// every day, in Berlin: ramp-up, peak, ramp-down; outside them (the night) the plain size 1 with no spare
const schedule = {
  timeZone: 'Europe/Berlin',
  periods: [
    { name: 'ramp-up', days: 'mon-sun', start: '07:00', end: '09:00', buffer: 2, min: 2, max: 6 },
    { name: 'peak', days: 'mon-sun', start: '09:00', end: '17:00', buffer: '50%', min: 3, max: 6 },
    { name: 'ramp-down', days: 'mon-sun', start: '17:00', end: '19:00', buffer: 1, min: 1, max: 6 },
  ],
};

const runStrategyOf = (object: WatchedObject) =>
  (object.spec as { runStrategy?: string } | undefined)?.runStrategy;

/** A VM stops when its run strategy turns to Halted from another. */
function watchVmScaleDowns(namespace: string) {
  return watchScaleDowns(cluster().kubeConfig, namespace, {
    path: `/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachines`,
    stops: (before, object) =>
      runStrategyOf(object) === 'Halted' && before !== undefined && runStrategyOf(before) !== 'Halted',
  });
}

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('a pool that follows the working day', () => {
  it('grows, warms, shrinks and sleeps on schedule through a day and a night with the clock change, never touching a claimed member', async () => {
    const namespace = await createTestNamespace(cluster(), 'schedule-day');
    // Saturday 28 March 2026, 05:00 in Berlin (CET); the clocks go forward at 02:00 that night
    const clock = createTestClock(new Date('2026-03-28T04:00:00Z'));
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const ctx = vdi.context;
    await ctx.cluster.createVm(namespace, stoppedVm('golden'));
    await createPool(ctx, { name: 'devpool', from: 'golden', size: 1, namespace });
    await vdi.setPoolSchedule({ name: 'devpool', namespace, schedule, plainSize: 1 });
    const watcher = watchVmScaleDowns(namespace);
    stops.push(watcher.stop);
    await watcher.ready;

    const held: string[] = [];
    const claim = async (count: number) => {
      for (let at = 0; at < count; at += 1) {
        held.push(
          (await vdi.claim({ pool: 'devpool', identity: `user-${held.length + 1}@example.com` })).member,
        );
      }
    };
    const release = async (count: number) => {
      for (const member of held.splice(0, count)) {
        const lease = await ctx.cluster.getLease(namespace, leaseNameFor(member));
        await vdi.release({ member, identity: lease?.spec.holderIdentity ?? '' });
      }
    };
    // what users do, by Berlin wall clock
    const actions = new Map<string, () => Promise<void>>([
      ['2026-03-28T08:00:00Z', () => claim(3)], // 09:00 CET, peak begins
      ['2026-03-28T11:00:00Z', () => claim(1)], // 12:00
      ['2026-03-28T16:30:00Z', () => release(3)], // 17:30, ramp-down
      ['2026-03-28T18:30:00Z', () => release(1)], // 19:30, night
    ]);
    // the size and free running members each step must have, by hand from the schedule: [UTC, size, free running]
    const expected: Array<[string, number, number]> = [
      ['2026-03-28T04:00:00Z', 1, 0], // 05:00 CET, night
      ['2026-03-28T05:30:00Z', 1, 0],
      ['2026-03-28T05:45:00Z', 2, 2], // 06:45: warmed 15 minutes ahead of ramp-up (buffer 2, min 2)
      ['2026-03-28T06:00:00Z', 2, 2], // ramp-up
      ['2026-03-28T07:45:00Z', 3, 2], // 08:45: warmed for peak (min 3); ramp-up's 2 free still hold
      ['2026-03-28T08:00:00Z', 5, 2], // peak, 3 claimed: 50 % is 2 free
      ['2026-03-28T11:00:00Z', 6, 2], // 4 claimed: the cap of 6
      ['2026-03-28T15:45:00Z', 6, 2],
      ['2026-03-28T16:00:00Z', 5, 1], // 17:00 ramp-down: 1 free
      ['2026-03-28T16:30:00Z', 2, 1], // 3 released: 1 claimed and 1 free
      ['2026-03-28T18:00:00Z', 1, 0], // 19:00 night: the claimed one, none free
      ['2026-03-28T18:30:00Z', 1, 0], // the last one released
      ['2026-03-29T00:45:00Z', 1, 0], // 01:45 CET
      ['2026-03-29T01:15:00Z', 1, 0], // 03:15 CEST: the clock jumped an hour
      ['2026-03-29T04:30:00Z', 1, 0], // 06:30 CEST
      ['2026-03-29T04:45:00Z', 2, 2], // 06:45 CEST, an hour earlier in UTC than on Saturday: warmed for ramp-up
      ['2026-03-29T05:00:00Z', 2, 2], // 07:00 CEST ramp-up
      ['2026-03-29T07:00:00Z', 3, 1], // 09:00 CEST peak with nobody: min 3, one free
    ];
    const checks = new Map(expected.map(([at, size, free]) => [at, { size, free }]));
    const end = new Date('2026-03-29T07:00:00Z').getTime();
    const seen: string[] = [];
    for (let at = clock.now().getTime(); at <= end; at += 15 * minute) {
      clock.set(new Date(at));
      const key = new Date(at).toISOString().replace('.000Z', 'Z');
      await actions.get(key)?.();
      // a pass at the step, then one a settle time later: members just freed are removed by the second
      const first = await vdi.keepPoolSchedule({ name: 'devpool', namespace });
      expect(first.kind, `the keeper at ${key}`).toBe('kept');
      clock.set(new Date(at + 11 * minute));
      const second = await vdi.keepPoolSchedule({ name: 'devpool', namespace });
      expect(second.kind, `the keeper at ${key} + 11 minutes`).toBe('kept');
      const readPool = async () => {
        const read = await readSpares(ctx, namespace, 'devpool');
        const standing = read.members.filter((member) => !member.deleting);
        const leaseOf = new Map(read.leases.map((lease) => [lease.metadata.name, lease]));
        const freeRunning = standing.filter((member) => {
          const holder = leaseOf.get(leaseNameFor(member.member))?.spec.holderIdentity;
          return (
            (!holder || holder === removalHolder) &&
            (member.power === 'running' || member.power === 'starting')
          );
        }).length;
        return { standing, freeRunning };
      };
      const want = checks.get(key);
      // KubeVirt shows a start the pass asked for a moment later: a checkpoint waits for the pool to show it
      const { standing, freeRunning } = want
        ? await waitFor(readPool, {
            describe: `the pool at ${key} to show ${JSON.stringify(want)}`,
            until: (found) => found.standing.length === want.size && found.freeRunning === want.free,
            timeoutMs: 15_000,
          }).catch(() => readPool())
        : await readPool();
      // every claimed member is still there, running
      for (const member of held) {
        expect(
          standing.find((candidate) => candidate.member === member)?.power,
          `${member} at ${key}`,
        ).toMatch(/running|starting/);
      }
      if (key === '2026-03-28T11:00:00Z') {
        const status = await vdi.readPoolStatus({ name: 'devpool', namespace });
        expect(status.schedule).toMatchObject({
          timeZone: 'Europe/Berlin',
          period: 'peak',
          warmingFor: null,
          nextChange: { at: '2026-03-28T16:00:00.000Z', period: 'ramp-down' },
          targets: { size: 6, freeRunning: 2 },
          plainSize: 1,
          underway: { cloning: 0, removing: 0 },
          failure: null,
        });
      }
      if (want) {
        seen.push(key);
        expect({ at: key, size: standing.length, free: freeRunning }).toEqual({ at: key, ...want });
      }
    }
    expect(seen).toEqual(expected.map(([at]) => at));
    const { touched, errors, events } = watcher.check();
    expect(errors).toEqual([]);
    expect(events).toBeGreaterThan(50);
    expect(touched).toEqual([]);
  }, 600_000);

  it('backs off a pool whose clones fail, reports it, and goes on once they work', async () => {
    const namespace = await createTestNamespace(cluster(), 'schedule-backoff');
    const clock = createTestClock(new Date('2026-03-30T08:00:00Z'));
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const failures: unknown[] = [];
    vdi.events.on('pool-schedule-failed', (event) => failures.push(event));
    await vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, namespace });
    await vdi.setPoolSchedule({ name: 'devpool', namespace, schedule, plainSize: 1 });
    // the golden VM is gone: every clone fails
    const golden = await vdi.context.cluster.getVm(namespace, 'golden');
    await vdi.context.cluster.deleteVm(namespace, 'golden', {
      uid: golden?.metadata.uid ?? '',
      resourceVersion: golden?.metadata.resourceVersion ?? '',
    });
    const keep = () => vdi.keepPoolSchedule({ name: 'devpool', namespace });
    const refused = await keep().catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'GOLDEN_NOT_FOUND' });
    expect(await keep()).toMatchObject({
      kind: 'backing-off',
      attempts: 1,
      retryAt: '2026-03-30T08:00:30.000Z',
    });
    clock.advance(30_000);
    await expect(keep()).rejects.toMatchObject({ code: 'GOLDEN_NOT_FOUND' });
    expect(await keep()).toMatchObject({
      kind: 'backing-off',
      attempts: 2,
      retryAt: '2026-03-30T08:01:30.000Z',
    });
    expect(failures).toHaveLength(2);
    expect((await vdi.readPoolStatus({ name: 'devpool', namespace })).schedule?.failure).toMatchObject({
      attempts: 2,
      retryAt: '2026-03-30T08:01:30.000Z',
    });

    await vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
    clock.advance(60_000);
    expect(await keep()).toMatchObject({ kind: 'kept', result: { targets: { period: 'peak' } } });
    expect((await vdi.readPoolStatus({ name: 'devpool', namespace })).schedule).toMatchObject({
      failure: null,
      targets: { size: 3 },
    });
    expect((await vdi.readPoolStatus({ name: 'devpool', namespace })).members).toHaveLength(3);
  });
});
