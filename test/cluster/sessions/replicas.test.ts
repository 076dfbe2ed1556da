import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { connectedAtAnnotation, consolesAnnotation, disconnectedAtAnnotation } from '../../../src/keys.js';
import { readConsoleEntries } from '../../../src/sessions/console-entries.js';
import {
  createSessionEngine,
  type SessionEngine,
  type SessionEngineOptions,
} from '../../../src/sessions/session-engine.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
// long enough that the heartbeat timer never fires during a test: the tests beat by hand, on the test clock
const heartbeatMs = 10 * minute;
const expiry = 3 * heartbeatMs;
const identity = 'user-1@example.com';
const cluster = useSharedCluster();

interface Replicas {
  namespace: string;
  member: string;
  /** Every claimed member, in order; `member` is the first. */
  members: string[];
  clock: TestClock;
  audit: MemoryAuditSink;
  /** A broker replica: its own SDK context and session engine, on the shared clock; no ID takes the default. */
  replica(replicaId: string | undefined, options?: Partial<SessionEngineOptions>, vdi?: Vdi): SessionEngine;
  /** A new SDK instance on the shared clock, as a replica process has. */
  vdiOf(): Vdi;
  lease(): ReturnType<Vdi['context']['cluster']['getLease']>;
}

async function setUp(count = 1): Promise<Replicas> {
  const namespace = await createTestNamespace(cluster(), 'replicas');
  await createPoolMembers(cluster(), namespace, 'devpool', count);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdiOf = () =>
    createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock,
      audit,
      retry: { retries: 1, minDelayMs: 10 },
    });
  const claimer = vdiOf();
  const members: string[] = [];
  for (let index = 0; index < count; index += 1) {
    members.push(
      (await claimer.claim({ pool: 'devpool', identity: `user-${index + 1}@example.com` })).member,
    );
  }
  members.sort();
  const member = members[0] ?? '';
  return {
    namespace,
    member,
    members,
    vdiOf,
    clock,
    audit,
    replica: (replicaId, options = {}, vdi = vdiOf()) =>
      createSessionEngine(vdi.context, {
        namespaces: [namespace],
        policy: { disconnectGraceMs: grace },
        heartbeatMs,
        ...(replicaId === undefined ? {} : { replicaId }),
        ...options,
      }),
    lease: () => claimer.context.cluster.getLease(namespace, `corral-vdi-${member}`),
  };
}

async function entriesOf(setup: Replicas) {
  const lease = await setup.lease();
  return lease ? [...readConsoleEntries(lease).keys()] : undefined;
}

describe('console state shared by broker replicas through the claim Lease', () => {
  it('keeps a desktop connected while a console is open on either replica, and runs one grace from the last close', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    const a = setup.replica('broker-a');
    const b = setup.replica('broker-b');

    const onA = await a.openConsole({ member, identity, kind: 'vnc' });
    const connectedAt = clock.now().toISOString();
    clock.advance(minute);
    const onB = await b.openConsole({ member, identity, kind: 'serial' });
    expect(await entriesOf(setup)).toEqual(['broker-a', 'broker-b']);
    expect((await setup.lease())?.metadata.annotations?.[connectedAtAnnotation]).toBe(connectedAt);

    clock.advance(minute);
    await onA.close();
    expect(await entriesOf(setup)).toEqual(['broker-b']);
    const lease = await setup.lease();
    expect(lease?.metadata.annotations?.[disconnectedAtAnnotation]).toBeUndefined();
    // the replica whose console closed sees the desktop as connected, as the other does
    expect(a.describe({ namespace, member, lease })).toMatchObject({ connected: true, reclaimAt: undefined });
    expect(b.describe({ namespace, member, lease })).toMatchObject({ connected: true, reclaimAt: undefined });

    clock.advance(grace);
    await b.heartbeat();
    expect(await a.runPass()).toMatchObject({ desktops: 1, reclaimed: 0, errors: [] });

    clock.advance(minute);
    const closedAt = clock.now();
    await onB.close();
    const closed = await setup.lease();
    expect(closed?.metadata.annotations?.[consolesAnnotation]).toBeUndefined();
    expect(closed?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(closedAt.toISOString());
    const expected = {
      connected: false,
      disconnectedAt: closedAt.toISOString(),
      reclaimAt: new Date(closedAt.getTime() + grace).toISOString(),
      reclaimReason: 'disconnect-grace',
    };
    expect(a.describe({ namespace, member, lease: closed })).toEqual(expected);
    expect(b.describe({ namespace, member, lease: closed })).toEqual(expected);

    clock.advance(grace - 1);
    expect(await a.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    clock.advance(1);
    expect(await a.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    expect(await setup.lease()).toBeUndefined();
  });

  it('gives a user who closes a console on one replica and reconnects through another the grace of one process', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    const a = setup.replica('broker-a');
    const b = setup.replica('broker-b');

    await (await a.openConsole({ member, identity, kind: 'vnc' })).close();
    clock.advance(10 * minute);
    // the reconnect lands on the other replica, within the grace
    const again = await b.openConsole({ member, identity, kind: 'vnc' });
    clock.advance(10 * minute);
    await b.heartbeat();
    expect(await a.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    expect(a.describe({ namespace, member, lease: await setup.lease() })).toMatchObject({ connected: true });

    await again.close();
    const closedAt = clock.now().getTime();
    // the close is on the Lease, where the other replica reads it
    const closed = await setup.lease();
    expect(closed?.metadata.annotations?.[consolesAnnotation]).toBeUndefined();
    expect(closed?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(new Date(closedAt).toISOString());
    clock.advance(grace - 1);
    expect(await a.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    clock.set(new Date(closedAt + grace));
    expect(await a.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(await setup.lease()).toBeUndefined();
  });

  it('records both consoles when two replicas open theirs at the same moment', async () => {
    const setup = await setUp();
    const { member, namespace } = setup;
    const replicas = ['broker-a', 'broker-b', 'broker-c'].map((id) => setup.replica(id));

    const handles = await Promise.all(
      replicas.map((replica) => replica.openConsole({ member, identity, kind: 'vnc' })),
    );
    expect(await entriesOf(setup)).toEqual(['broker-a', 'broker-b', 'broker-c']);

    await Promise.all(handles.slice(0, 2).map((handle) => handle.close()));
    expect(await entriesOf(setup)).toEqual(['broker-c']);
    expect(replicas[0]?.describe({ namespace, member, lease: await setup.lease() })).toMatchObject({
      connected: true,
    });
  });

  it('keeps a replica’s console counted while it heartbeats, past the expiry of an entry', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    const a = setup.replica('broker-a');
    const reclaimer = setup.replica('broker-b');
    await a.openConsole({ member, identity, kind: 'vnc' });

    for (let elapsed = 0; elapsed < 2 * expiry + grace; elapsed += heartbeatMs) {
      clock.advance(heartbeatMs);
      await a.heartbeat();
      expect(await reclaimer.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    }
    const lease = await setup.lease();
    expect(readConsoleEntries(lease!).get('broker-a')).toEqual({
      open: 1,
      seenAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + expiry),
    });
    expect(reclaimer.describe({ namespace, member, lease })).toMatchObject({ connected: true });
  });

  it('refreshes a replica’s entry on its own timer while it has a console open, started or not', async () => {
    const setup = await setUp();
    const { member, clock } = setup;
    // a heartbeat every 100 ms of real time; what it writes is the test clock's
    const a = setup.replica('broker-a', { heartbeatMs: 100 });
    const handle = await a.openConsole({ member, identity, kind: 'vnc' });
    clock.advance(minute);
    const beaten = await waitFor(async () => readConsoleEntries((await setup.lease())!).get('broker-a'), {
      describe: 'the heartbeat to refresh broker-a’s entry',
      until: (entry) => entry?.seenAt.getTime() === clock.now().getTime(),
    });
    expect(beaten).toEqual({
      open: 1,
      seenAt: clock.now(),
      expiresAt: new Date(clock.now().getTime() + 300),
    });
    await handle.close();
    expect(await entriesOf(setup)).toEqual([]);
  });

  it('refreshes the entries of a replica’s desktops with one update each, reading a Lease only after a conflict', async () => {
    const setup = await setUp(3);
    const { clock } = setup;
    const vdi = setup.vdiOf();
    const a = setup.replica('broker-a', {}, vdi);
    for (const [index, member] of setup.members.entries()) {
      await a.openConsole({ member, identity: `user-${index + 1}@example.com`, kind: 'vnc' });
    }
    const kube = vdi.context.cluster;
    const counted = () => ({ total: kube.requestTotal, updates: kube.requestCounts.get('update') ?? 0 });

    clock.advance(minute);
    await a.heartbeat();
    const first = counted();
    clock.advance(minute);
    await a.heartbeat();
    expect({
      total: kube.requestTotal - first.total,
      updates: (kube.requestCounts.get('update') ?? 0) - first.updates,
    }).toEqual({ total: 3, updates: 3 });

    // another replica writes one of the Leases: that one is read again after its conflict
    await setup
      .replica('broker-b')
      .openConsole({ member: setup.member, identity: 'user-1@example.com', kind: 'vnc' });
    const second = counted();
    clock.advance(minute);
    await a.heartbeat();
    expect({
      total: kube.requestTotal - second.total,
      updates: (kube.requestCounts.get('update') ?? 0) - second.updates,
    }).toEqual({ total: 5, updates: 4 });
    for (const member of setup.members) {
      const lease = await vdi.context.cluster.getLease(setup.namespace, `corral-vdi-${member}`);
      expect(readConsoleEntries(lease!).get('broker-a')?.seenAt).toEqual(clock.now());
    }
  });

  it('counts the console of a replica that died as open until its entry expires, then reclaims after the grace from there', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    const dead = setup.replica('broker-a');
    const reclaimer = setup.replica('broker-b', { renewIntervalMs: 10 * minute });
    await dead.openConsole({ member, identity, kind: 'vnc' });
    const expiresAt = clock.now().getTime() + expiry;
    // broker-a stops here: no heartbeat, no close

    clock.set(new Date(expiresAt - 1));
    // this renewal keeps the live entry
    expect(await reclaimer.runPass()).toMatchObject({ renewed: 1, reclaimed: 0, errors: [] });
    expect(await entriesOf(setup)).toEqual(['broker-a']);
    expect(reclaimer.describe({ namespace, member, lease: await setup.lease() })).toMatchObject({
      connected: true,
    });

    clock.set(new Date(expiresAt));
    expect(await reclaimer.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    expect(reclaimer.describe({ namespace, member, lease: await setup.lease() })).toEqual({
      connected: false,
      disconnectedAt: new Date(expiresAt).toISOString(),
      reclaimAt: new Date(expiresAt + grace).toISOString(),
      reclaimReason: 'disconnect-grace',
    });

    // a renewal on the way drops the dead entry and records where the grace runs from
    clock.set(new Date(expiresAt + grace - 1));
    expect(await reclaimer.runPass()).toMatchObject({ renewed: 1, reclaimed: 0, errors: [] });
    const renewed = await setup.lease();
    expect(renewed?.metadata.annotations?.[consolesAnnotation]).toBeUndefined();
    expect(renewed?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(new Date(expiresAt).toISOString());

    clock.set(new Date(expiresAt + grace));
    expect(await reclaimer.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    expect(await setup.lease()).toBeUndefined();
    expect(setup.audit.list().filter((record) => record.action.startsWith('vdi reclaim'))).toEqual([
      expect.objectContaining({ action: 'vdi reclaim (disconnect-grace)', status: 'ok' }),
    ]);
  });

  it('gives every engine a replica ID of its own unless told one, and refuses a malformed ID or heartbeat', async () => {
    const setup = await setUp();
    const first = setup.replica(undefined);
    const second = setup.replica(undefined);
    expect(first.replicaId).toMatch(/^[\x21-\x7e]+-[0-9a-f]{8}$/);
    expect(second.replicaId).not.toBe(first.replicaId);
    expect(setup.replica('pod-7f9c_3a1e').replicaId).toBe('pod-7f9c_3a1e');
    for (const bad of [
      { replicaId: '' },
      { replicaId: 'two words' },
      { replicaId: 'x'.repeat(254) },
      { heartbeatMs: 0 },
    ]) {
      expect(() => setup.replica('broker-a', bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    }
  });

  it('rewrites the entry a replica’s earlier process left under the same ID when the new process opens a console', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    await setup.replica('broker-a').openConsole({ member, identity, kind: 'vnc' });
    const oldExpiry = clock.now().getTime() + expiry;
    // broker-a restarts under the same ID and its user reconnects just before the old entry expires
    clock.set(new Date(oldExpiry - minute));
    const restarted = setup.replica('broker-a', { processStartedAt: clock.now() });
    await restarted.openConsole({ member, identity, kind: 'vnc' });
    expect(readConsoleEntries((await setup.lease())!).get('broker-a')?.expiresAt).toEqual(
      new Date(clock.now().getTime() + expiry),
    );
    clock.set(new Date(oldExpiry + minute));
    const reclaimer = setup.replica('broker-b');
    expect(reclaimer.describe({ namespace, member, lease: await setup.lease() })).toMatchObject({
      connected: true,
    });
  });

  it('never reclaims at once after every replica restarted: a console open at the restart gets a full grace from it', async () => {
    const setup = await setUp();
    const { member, namespace, clock } = setup;
    await setup.replica('broker-a').openConsole({ member, identity, kind: 'vnc' });
    // the whole deployment is down far longer than the expiry and the grace
    clock.advance(expiry + 2 * grace);
    const restartedAt = clock.now().getTime();
    const restarted = setup.replica('broker-a2', { processStartedAt: clock.now() });

    expect(await restarted.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    expect(restarted.describe({ namespace, member, lease: await setup.lease() })).toMatchObject({
      connected: false,
      disconnectedAt: new Date(restartedAt).toISOString(),
      reclaimAt: new Date(restartedAt + grace).toISOString(),
    });
    clock.set(new Date(restartedAt + grace - 1));
    expect(await restarted.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    clock.set(new Date(restartedAt + grace));
    expect(await restarted.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
  });
});

describe('the consoles of a desktop another replica releases or reclaims', () => {
  it('end here with the release’s cause once the member is down, told by the Lease cache', async () => {
    const setup = await setUp(2);
    const [released = '', reclaimed = ''] = setup.members;
    const here = setup.vdiOf();
    here.startCaches([setup.namespace]);
    try {
      await here.waitForCacheSync();
      const consoles = setup.replica('replica-here', {}, here);
      const rdp = await consoles.openConsole({
        member: released,
        identity: 'user-1@example.com',
        kind: 'rdp',
      });
      const vnc = await consoles.openConsole({
        member: reclaimed,
        identity: 'user-2@example.com',
        kind: 'vnc',
      });
      // the guest takes a moment to go: meanwhile a console whose stream closes first reads the cause
      const kube = here.context.cluster;
      await kube.patchVm(setup.namespace, released, {
        metadata: { annotations: { 'sim.kubevirt.corral.dev/stop-delay-ms': '1500' } },
      });

      const there = setup.vdiOf();
      await there.release({ member: released, identity: 'admin', asAdmin: true });
      expect(rdp.ending()).toMatchObject({ cause: 'released' });
      await waitFor(() => rdp.ended.aborted, { describe: 'the rdp console here to end' });
      expect(rdp.ended.reason).toEqual({
        cause: 'released',
        message: 'The desktop was released; claim a desktop to go on.',
      });
      expect((await kube.getVmi(setup.namespace, released)) ?? undefined).toBeUndefined();
      expect(vnc.ended.aborted).toBe(false);

      const leader = setup.replica('replica-there', { policy: { maxSessionMs: 30 * minute } }, there);
      setup.clock.advance(31 * minute);
      expect(await leader.runPass()).toMatchObject({ reclaimed: 1 });
      await waitFor(() => vnc.ended.aborted, { describe: 'the vnc console here to end' });
      expect(vnc.ended.reason).toEqual({
        cause: 'reclaimed',
        reason: 'max-duration',
        message: 'The desktop was reclaimed (max-duration); claim a desktop again to go on.',
      });
    } finally {
      here.stopCaches();
    }
  });
});

describe('the consoles of a desktop this replica reclaims', () => {
  it('tell the cause from the moment the stop is accepted, before the release answers, without a Lease cache', async () => {
    const setup = await setUp();
    const { member, namespace } = setup;
    const vdi = setup.vdiOf();
    // the fence runs before each of the release's writes: the last ones come after the stop was accepted, when
    // KubeVirt may already be taking the guest down and its console stream with it
    const seen: unknown[] = [];
    let vnc: Awaited<ReturnType<SessionEngine['openConsole']>> | undefined;
    const engine = setup.replica(
      'replica-here',
      {
        policy: { maxSessionMs: 30 * minute },
        fence: async () => {
          seen.push(vnc?.ending());
        },
      },
      vdi,
    );
    vnc = await engine.openConsole({ member, identity, kind: 'vnc' });
    setup.clock.advance(31 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.at(-1)).toEqual({
      cause: 'reclaimed',
      reason: 'max-duration',
      message: 'The desktop was reclaimed (max-duration); claim a desktop again to go on.',
    });
    expect(
      (await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`)) ?? undefined,
    ).toBeUndefined();
  });
});
