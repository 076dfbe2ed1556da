import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import {
  createLeaderElector,
  defaultLeaderLeaseName,
  type LeaderElector,
  type LeaderElectorOptions,
} from '../../../src/leader/leader-elector.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();
const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };
const minute = 60_000;

interface Replica {
  vdi: Vdi;
  clock: TestClock;
  audit: MemoryAuditSink;
  elector: LeaderElector;
  /** What the elector told this replica, in order. */
  calls: string[];
}

function replicaOf(
  namespace: string,
  identity: string,
  options: Partial<LeaderElectorOptions> = {},
): Replica {
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
  const calls: string[] = [];
  const elector = createLeaderElector(vdi.context, {
    namespace,
    identity,
    ...timings,
    onStarted: () => {
      calls.push('started');
    },
    onStopped: () => {
      calls.push('stopped');
    },
    ...options,
  });
  return { vdi, clock, audit, elector, calls };
}

async function leaderLease({ vdi }: Replica, namespace: string) {
  return await vdi.context.cluster.getLease(namespace, defaultLeaderLeaseName);
}

describe('leader election on the real apiserver', () => {
  it('lets exactly one of two racing replicas lead; the other follows until the Lease stops changing for a lease duration', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader');
    const a = replicaOf(namespace, 'replica-a');
    const b = replicaOf(namespace, 'replica-b');
    const won = await Promise.all([a.elector.tryAcquireOrRenew(), b.elector.tryAcquireOrRenew()]);
    expect(won.filter(Boolean)).toHaveLength(1);
    const [leader, follower] = won[0] ? [a, b] : [b, a];
    expect((await leaderLease(a, namespace))?.spec.holderIdentity).toBe(leader.elector.identity);
    await waitFor(() => leader.calls.includes('started'), { describe: 'the winner to start leading' });

    // the follower must see the Lease first: its wait runs from its own observation
    expect(await follower.elector.tryAcquireOrRenew()).toBe(false);
    follower.clock.advance(timings.leaseDurationMs - 1);
    expect(await follower.elector.tryAcquireOrRenew()).toBe(false);
    // a renewal changes the Lease, so the wait starts again
    leader.clock.advance(timings.retryPeriodMs);
    expect(await leader.elector.tryAcquireOrRenew()).toBe(true);
    follower.clock.advance(2);
    expect(await follower.elector.tryAcquireOrRenew()).toBe(false);
    follower.clock.advance(timings.leaseDurationMs - 1);
    expect(await follower.elector.tryAcquireOrRenew()).toBe(false);
    expect(follower.calls).toEqual([]);

    // the leader stops renewing (paused): a lease duration later the follower takes over
    follower.clock.advance(1);
    expect(await follower.elector.tryAcquireOrRenew()).toBe(true);
    const lease = await leaderLease(a, namespace);
    expect(lease?.spec).toMatchObject({ holderIdentity: follower.elector.identity, leaseTransitions: 1 });
    await waitFor(() => follower.calls.includes('started'), { describe: 'the new leader to start leading' });

    // the old leader's clock did not move (paused, or skewed): only the fence's read shows the loss
    expect(leader.elector.isLeader()).toBe(true);
    await expect(leader.elector.fence()).rejects.toMatchObject({ code: 'NOT_LEADER' });
    expect(leader.elector.isLeader()).toBe(false);
    await waitFor(() => leader.calls.join() === 'started,stopped', { describe: 'the old leader to stop' });
    expect(await leader.elector.tryAcquireOrRenew()).toBe(false);
    expect((await leaderLease(a, namespace))?.metadata.resourceVersion).toBe(lease?.metadata.resourceVersion);
  });

  it('lets fence calls made at once share the reads of the Lease, each read issued after the calls it answers', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader-fence-reads');
    const a = replicaOf(namespace, 'replica-a');
    const b = replicaOf(namespace, 'replica-b');
    expect(await a.elector.tryAcquireOrRenew()).toBe(true);
    const gets = () => a.vdi.context.cluster.requestCounts.get('get') ?? 0;
    const before = gets();
    // a pass's writes, sixteen at a time
    await Promise.all(Array.from({ length: 16 }, () => a.elector.fence()));
    expect(gets() - before).toBe(2);

    // a read that has answered answers no later call: b's takeover is seen by the next one
    b.clock.advance(timings.leaseDurationMs);
    expect(await b.elector.tryAcquireOrRenew()).toBe(false);
    b.clock.advance(timings.leaseDurationMs);
    expect(await b.elector.tryAcquireOrRenew()).toBe(true);
    await expect(a.elector.fence()).rejects.toMatchObject({ code: 'NOT_LEADER' });
    expect(gets() - before).toBe(3);
  });

  it('releases the Lease on stop after onStopped, so a follower takes over on its next try', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader-release');
    let heldDuringStop: string | undefined;
    const a: Replica = replicaOf(namespace, 'replica-a', {
      onStopped: async () => {
        heldDuringStop = (await leaderLease(a, namespace))?.spec.holderIdentity;
      },
    });
    const b = replicaOf(namespace, 'replica-b');
    expect(await a.elector.tryAcquireOrRenew()).toBe(true);
    expect(await b.elector.tryAcquireOrRenew()).toBe(false);

    await a.elector.stop();
    expect(heldDuringStop).toBe('replica-a');
    expect((await leaderLease(a, namespace))?.spec.holderIdentity).toBeUndefined();
    // no clock moved: a released Lease is free at once
    expect(await b.elector.tryAcquireOrRenew()).toBe(true);
    expect((await leaderLease(a, namespace))?.spec).toMatchObject({
      holderIdentity: 'replica-b',
      leaseTransitions: 1,
    });
  });

  it('fences a paused former leader: its session engine writes nothing, and the new leader reclaims each desktop once', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader-fence');
    const members = await createPoolMembers(cluster(), namespace, 'devpool', 2);
    const a = replicaOf(namespace, 'replica-a');
    const b = replicaOf(namespace, 'replica-b');
    for (const index of members.keys()) {
      await a.vdi.claim({ pool: 'devpool', identity: `user-${index}@example.com` });
    }
    const engineOf = (replica: Replica) =>
      createSessionEngine(replica.vdi.context, {
        namespaces: [namespace],
        policy: { maxSessionMs: 10 * minute },
        fence: replica.elector.fence,
      });
    const leases = async () =>
      (await a.vdi.context.cluster.listLeases(namespace, 'corral.dev/vdi-pool')).map(
        (lease) => `${lease.metadata.name}@${lease.metadata.resourceVersion}`,
      );

    // a leads when the claims are due; then it pauses and b, whose clock runs on, takes over
    a.clock.advance(11 * minute);
    b.clock.advance(11 * minute);
    expect(await a.elector.tryAcquireOrRenew()).toBe(true);
    expect(await b.elector.tryAcquireOrRenew()).toBe(false);
    b.clock.advance(timings.leaseDurationMs);
    expect(await b.elector.tryAcquireOrRenew()).toBe(true);

    // a wakes with its clock where it stopped, still sure it leads; the fence's read stops every write
    const before = await leases();
    expect(before).toHaveLength(2);
    const fenced = await engineOf(a).runPass();
    expect(fenced).toMatchObject({ reclaimed: 0, renewed: 0, failed: 0 });
    expect(fenced.errors.map((error) => error.code)).toEqual(['NOT_LEADER']);
    expect(await leases()).toEqual(before);
    expect(a.audit.list().filter((record) => record.action !== 'vdi claim')).toEqual([]);

    // a woken leader whose clock ran on past its renew deadline is refused without a read
    a.clock.advance(timings.renewDeadlineMs);
    expect((await engineOf(a).runPass()).errors.map((error) => error.code)).toEqual(['NOT_LEADER']);

    const leading = await engineOf(b).runPass();
    expect(leading).toMatchObject({ reclaimed: 2, failed: 0, errors: [] });
    expect(await leases()).toEqual([]);
    const reclaims = b.audit
      .list()
      .map((record) => [record.action, record.target.split(' ')[0], record.status]);
    expect(reclaims.sort()).toEqual(
      members.map((member) => ['vdi reclaim (max-duration)', `vm/${namespace}/${member}`, 'ok']),
    );
  });

  it('refuses bad options with INVALID_INPUT before any request, and names each replica by host and a random suffix', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader-options');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    for (const bad of [
      { leaseDurationMs: 2000, renewDeadlineMs: 2000 },
      { leaseName: 'Not_A_Name' },
      { identity: ' ' },
      { retryPeriodMs: 0 },
    ]) {
      expect(() => createLeaderElector(vdi.context, { namespace, ...bad })).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    }
    expect(await vdi.context.cluster.getLease(namespace, defaultLeaderLeaseName)).toBeUndefined();
    const [first, second] = [0, 1].map(() => createLeaderElector(vdi.context, { namespace }).identity);
    expect(first).toMatch(new RegExp(`^${hostname()}-[0-9a-f]{8}$`));
    expect(second).not.toBe(first);
  });

  it('runs the loop: one of two started replicas leads, and a stop hands over within a retry period', async () => {
    const namespace = await createTestNamespace(cluster(), 'leader-loop');
    // the loop's waits are real time, so its decisions take the real clock too
    const real = { now: () => new Date() };
    const electors = ['replica-a', 'replica-b'].map((identity) => {
      const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: real });
      return createLeaderElector(vdi.context, { namespace, identity, ...timings });
    });
    for (const elector of electors) elector.start();
    try {
      const leader = await waitFor(() => electors.find((elector) => elector.isLeader()), {
        describe: 'one replica to lead',
      });
      const other = electors.find((elector) => elector !== leader);
      expect(other?.isLeader()).toBe(false);
      const stoppedAt = Date.now();
      await leader.stop();
      await waitFor(() => other?.isLeader(), { describe: 'the other replica to take over' });
      expect(Date.now() - stoppedAt).toBeLessThan(timings.leaseDurationMs);
      expect(leader.isLeader()).toBe(false);
    } finally {
      await Promise.all(electors.map((elector) => elector.stop()));
    }
  });
});
