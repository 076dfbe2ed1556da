import { tmpdir } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createBroker } from '../../../src/broker/broker.js';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import type { PoolBody } from '../../../src/broker/schemas.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { enqueueWaiter } from '../../../src/waitlist/waiter-leases.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { startCountingProxy } from '../../support/counting-proxy.js';

const cluster = useSharedCluster();

// in Berlin every day: a peak that keeps half the claims free, and a late evening that may scale to zero
const schedule = {
  timeZone: 'Europe/Berlin',
  periods: [
    { name: 'peak', days: 'mon-sun', start: '09:00', end: '17:00', buffer: '50%', min: 2, max: 6 },
    {
      name: 'late',
      days: 'mon-sun',
      start: '20:00',
      end: '24:00',
      buffer: 0,
      min: 1,
      max: 3,
      scaleToZero: true,
    },
  ],
};

describe("the broker's pool answers and metrics", () => {
  it("show a pool's schedule and roll-out, and a scrape lists as much for three scheduled pools as for one", async () => {
    const namespace = await createTestNamespace(cluster(), 'pool-plans');
    // Saturday 28 March 2026, 09:30 in Berlin (CET)
    const clock = createTestClock(new Date('2026-03-28T08:30:00Z'));
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const ctx = vdi.context;
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v1'));
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v2'));
    for (const name of ['devpool', 'lab', 'kiosk', 'plain'])
      await createPool(ctx, { name, from: 'golden-v1', size: 3, namespace });
    await vdi.setPoolSchedule({ name: 'devpool', namespace, schedule, plainSize: 1 });
    await vdi.claim({ pool: 'devpool', identity: 'ann@example.com' });
    await vdi.claim({ pool: 'devpool', identity: 'bob@example.com' });
    await vdi.startPoolRollout({
      name: 'devpool',
      namespace,
      from: 'golden-v2',
      maxUnavailable: 1,
      deadline: '2026-03-28T12:00:00Z',
    });
    const broker = createBroker({
      vdi,
      identity: [authGatewayIdentity({ header: 'X-Forwarded-Email' })],
      namespaces: [namespace],
      metrics: true,
      log: () => {},
    });
    const listPools = async () => {
      const answer = await broker.fetch(
        new Request('http://broker.test/api/vdi/pools', {
          headers: { 'X-Forwarded-Email': 'eve@example.com' },
        }),
      );
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as { pools: PoolBody[] };
      return new Map(body.pools.map((pool) => [pool.name, pool]));
    };

    const pools = await waitFor(listPools, {
      describe: 'the pool answer to show the roll-out',
      until: (read) => read.get('devpool')?.rollOut !== null,
    });
    // 2 claimed at peak: 50 % keeps 1 free, a size of 3; the roll-out waits for both holders or the deadline
    expect(pools.get('devpool')).toMatchObject({
      members: 3,
      claimed: 2,
      schedule: {
        timeZone: 'Europe/Berlin',
        period: 'peak',
        warmingFor: null,
        nextChange: { at: '2026-03-28T16:00:00.000Z', period: null },
        targets: { size: 3, freeRunning: 1 },
        scaleToZero: false,
        plainSize: 1,
        failing: null,
      },
      rollOut: {
        to: 'golden-v2',
        onTarget: 0,
        total: 3,
        maxUnavailable: 1,
        paused: false,
        deadline: '2026-03-28T12:00:00.000Z',
        finishedAt: null,
        rebuilding: 0,
        waiting: 2,
      },
    });
    expect(pools.get('plain')).toMatchObject({ schedule: null, rollOut: null });

    const text = await broker.metrics.render();
    const pool = `kind="vm",namespace="${namespace}",pool="devpool"`;
    expect(text).toContain(`corral_vdi_pool_schedule_period{${pool},period="peak",warming_for=""} 1`);
    expect(text).toContain(`corral_vdi_pool_schedule_target_members{${pool},target="size"} 3`);
    expect(text).toContain(`corral_vdi_pool_schedule_target_members{${pool},target="free-running"} 1`);
    expect(text).toContain(`corral_vdi_pool_schedule_scale_to_zero{${pool}} 0`);
    expect(text).toContain(
      `corral_vdi_pool_schedule_next_change_timestamp_seconds{${pool}} ${Date.parse('2026-03-28T16:00:00Z') / 1000}`,
    );
    expect(text).toContain(`corral_vdi_pool_schedule_failures{${pool}} 0`);
    expect(text).toContain(`corral_vdi_pool_rollout_members{${pool},to="golden-v2",state="waiting"} 2`);
    expect(text).toContain(`corral_vdi_pool_rollout_paused{${pool},to="golden-v2"} 0`);
    expect(text).not.toContain('pool="plain",target=');

    // 21:30 in Berlin: the late period may scale to zero, and nothing is free with 2 claimed
    clock.set(new Date('2026-03-28T20:30:00Z'));
    expect((await listPools()).get('devpool')?.schedule).toMatchObject({
      period: 'late',
      targets: { size: 2, freeRunning: 0 },
      scaleToZero: true,
      nextChange: { at: '2026-03-28T23:00:00.000Z', period: null },
    });
    expect(await broker.metrics.render()).toContain(`corral_vdi_pool_schedule_scale_to_zero{${pool}} 1`);

    // what a scrape asks the apiserver does not grow with the scheduled pools
    const scrapeLists = async () => {
      const before = ctx.cluster.requestCounts.get('list') ?? 0;
      await broker.metrics.render();
      return (ctx.cluster.requestCounts.get('list') ?? 0) - before;
    };
    const withOne = await scrapeLists();
    await vdi.setPoolSchedule({ name: 'lab', namespace, schedule, plainSize: 1 });
    await vdi.setPoolSchedule({ name: 'kiosk', namespace, schedule, plainSize: 1 });
    await waitFor(async () => (await broker.metrics.render()).includes('pool="kiosk",target="size"'), {
      describe: 'the scrape to show the third schedule',
    });
    expect(await scrapeLists()).toBe(withOne);
    // per namespace: the claim Leases, VMs, VMIs, container pool specs; the settings; and for the plans every Lease
    // (waiters too): the plans' VMs, VMIs and container pool specs are the same lists, read once a scrape
    expect(withOne).toBe(6);
  });

  it("counts in a pool's status only the waiters of that pool, not those of the namespace's other pools", async () => {
    const namespace = await createTestNamespace(cluster(), 'pool-waiters');
    // 09:30 in Berlin, at peak
    const clock = createTestClock(new Date('2026-03-28T08:30:00Z'));
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
    await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, namespace });
    await createPool(vdi.context, { name: 'lab', from: 'golden', size: 1, namespace });
    await vdi.setPoolSchedule({ name: 'devpool', namespace, schedule, plainSize: 1 });
    await enqueueWaiter(vdi.context, { kind: 'vm', namespace, pool: 'lab', identity: 'ann@example.com' });
    expect((await vdi.readPoolStatus({ name: 'lab', namespace })).waiters).toBe(1);
    const devpool = await vdi.readPoolStatus({ name: 'devpool', namespace });
    expect(devpool.waiters).toBe(0);
    // nobody claims and nobody waits for devpool: one free running member, the least a period keeps, of min 2
    expect(devpool.schedule?.targets).toEqual({ size: 2, freeRunning: 1 });
  });

  it("show a container pool's schedule in its answer and its metrics, its waiters counted as demand", async () => {
    const namespace = await createTestNamespace(cluster(), 'pool-plans-ct');
    // Saturday 28 March 2026, 09:30 in Berlin (CET): peak
    const clock = createTestClock(new Date('2026-03-28T08:30:00Z'));
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    const image = 'ghcr.io/acme/devbox:1.4';
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, schedule } });
    await vdi.applyCtPool({ spec: { name: 'plainbox', image, size: 1 } });
    await vdi.reconcileCtPool({ name: 'devbox', namespace });
    await vdi.claim({ pool: 'devbox', identity: 'ann@example.com', kind: 'ct' });
    await enqueueWaiter(vdi.context, { kind: 'ct', namespace, pool: 'devbox', identity: 'bob@example.com' });
    const broker = createBroker({
      vdi,
      identity: [authGatewayIdentity({ header: 'X-Forwarded-Email' })],
      namespaces: [namespace],
      metrics: true,
      log: () => {},
    });
    const answer = await broker.fetch(
      new Request('http://broker.test/api/vdi/pools', {
        headers: { 'X-Forwarded-Email': 'eve@example.com' },
      }),
    );
    const pools = new Map(
      ((await answer.json()) as { pools: PoolBody[] }).pools.map((pool) => [pool.name, pool]),
    );
    // 1 claimed and 1 waiting at peak: 50 % of 1 is 1 free, and 1 more for the waiter; the floor is 2
    expect(pools.get('devbox')).toMatchObject({
      kind: 'ct',
      schedule: {
        period: 'peak',
        targets: { size: 3, freeRunning: 2 },
        plainSize: 1,
        nextChange: { at: '2026-03-28T16:00:00.000Z', period: null },
        failing: null,
      },
      rollOut: null,
    });
    expect(pools.get('plainbox')).toMatchObject({ kind: 'ct', schedule: null, rollOut: null });
    const text = await broker.metrics.render();
    const pool = `kind="ct",namespace="${namespace}",pool="devbox"`;
    expect(text).toContain(`corral_vdi_pool_schedule_period{${pool},period="peak",warming_for=""} 1`);
    expect(text).toContain(`corral_vdi_pool_schedule_target_members{${pool},target="size"} 3`);
    expect(text).toContain(`corral_vdi_pool_schedule_target_members{${pool},target="free-running"} 2`);
    expect(text).not.toContain('pool="plainbox",target=');
  });

  it('answer the pools route with one read of the settings, the VMs, their instances and the Leases of a namespace, without caches', async () => {
    const namespace = await createTestNamespace(cluster(), 'pool-reads');
    const clock = createTestClock(new Date('2026-03-28T08:30:00Z'));
    const setUp = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await setUp.context.cluster.createVm(namespace, stoppedVm('golden'));
    await createPool(setUp.context, { name: 'devpool', from: 'golden', size: 2, namespace });
    await createPool(setUp.context, { name: 'lab', from: 'golden', size: 1, namespace });
    await setUp.setPoolSchedule({ name: 'devpool', namespace, schedule, plainSize: 1 });
    await setUp.claim({ pool: 'lab', identity: 'ann@example.com' });

    const proxy = await startCountingProxy(cluster(), `${tmpdir()}/pool-reads-${process.pid}.kubeconfig`);
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(proxy.kubeconfigPath);
      const broker = createBroker({
        vdi: createVdi({ kubeConfig, namespace, clock }),
        identity: [authGatewayIdentity({ header: 'X-Forwarded-Email' })],
        namespaces: [namespace],
        log: () => {},
      });
      const answer = await broker.fetch(
        new Request('http://broker.test/api/vdi/pools', {
          headers: { 'X-Forwarded-Email': 'eve@example.com' },
        }),
      );
      expect(answer.status).toBe(200);
      const { pools } = (await answer.json()) as { pools: PoolBody[] };
      expect(
        pools.map((pool) => [pool.name, pool.members, pool.claimed, pool.schedule?.period ?? null]),
      ).toEqual([
        ['devpool', 2, 0, 'peak'],
        ['lab', 1, 1, null],
      ]);

      const asked = new Map<string, number>();
      for (const { verb, resource } of proxy.requests()) {
        const key = `${verb} ${resource}`;
        asked.set(key, (asked.get(key) ?? 0) + 1);
      }
      // the pools' settings and the container pools' specs are two selectors of ConfigMaps
      expect(Object.fromEntries(asked)).toEqual({
        'list configmaps': 2,
        'list virtualmachines': 1,
        'list virtualmachineinstances': 1,
        'list leases': 1,
      });
    } finally {
      await proxy.close();
    }
  });
});
