import { describe, expect, it } from 'vitest';
import { type AuditRecord, MemoryAuditSink } from '../../../src/audit.js';
import { isLeaseExpired } from '../../../src/claims/claim-liveness.js';
import type { VdiEvents } from '../../../src/events.js';
import {
  assignedToKey,
  connectedAtAnnotation,
  disconnectedAtAnnotation,
  ephemeralLabel,
  releasingAnnotation,
  sourceAnnotation,
} from '../../../src/keys.js';
import { createPool } from '../../../src/pools/pool-service.js';
import {
  createSessionEngine,
  reclaimActor,
  type SessionEngineOptions,
} from '../../../src/sessions/session-engine.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import {
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
const cluster = useSharedCluster();

interface Setup {
  namespace: string;
  vdi: Vdi;
  clock: TestClock;
  audit: MemoryAuditSink;
  events: Array<[keyof VdiEvents, unknown]>;
  engine(options?: Partial<SessionEngineOptions>): ReturnType<typeof createSessionEngine>;
}

async function setUp(members = 1): Promise<Setup & { claimed: string[] }> {
  const namespace = await createTestNamespace(cluster(), 'sessions');
  await createPoolMembers(cluster(), namespace, 'devpool', members);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdi = createVdi({
    kubeConfig: cluster().kubeConfig,
    namespace,
    clock,
    audit,
    retry: { retries: 1, minDelayMs: 10 },
  });
  const events: Setup['events'] = [];
  for (const name of ['reclaimed', 'reclaim-failed', 'renewed'] as const) {
    vdi.events.on(name, (event) => events.push([name, event]));
  }
  const claimed: string[] = [];
  for (let index = 0; index < members; index += 1) {
    claimed.push((await vdi.claim({ pool: 'devpool', identity: `user-${index + 1}@example.com` })).member);
  }
  claimed.sort();
  const engine = (options: Partial<SessionEngineOptions> = {}) =>
    createSessionEngine(vdi.context, {
      namespaces: [namespace],
      policy: { disconnectGraceMs: grace },
      ...options,
    });
  return { namespace, vdi, clock, audit, events, engine, claimed };
}

async function leaseOf({ vdi, namespace }: Setup, member: string) {
  return await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
}

function reclaimRecords(audit: MemoryAuditSink): AuditRecord[] {
  return audit.list().filter((record) => record.action.startsWith('vdi reclaim'));
}

async function expectStopped(setup: Setup, member: string): Promise<void> {
  const vm = await setup.vdi.context.cluster.getVm(setup.namespace, member);
  expect(vm?.spec.runStrategy).toBe('Halted');
  await waitFor(
    async () => (await setup.vdi.context.cluster.getVm(setup.namespace, member))?.status?.printableStatus,
    { describe: `${member} to show Stopped`, until: (shown) => shown === 'Stopped' },
  );
}

describe('the session engine against a real apiserver', () => {
  it('reclaims a desktop once the grace after its last console closes has passed', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const engine = setup.engine();

    const handle = await engine.openConsole({ member, identity: 'user-1@example.com', kind: 'vnc' });
    const connected = await leaseOf(setup, member);
    expect(connected?.metadata.annotations?.[connectedAtAnnotation]).toBe(setup.clock.now().toISOString());
    expect(engine.describe({ namespace: setup.namespace, member, lease: connected })).toMatchObject({
      connected: true,
      reclaimAt: undefined,
    });

    setup.clock.advance(5 * minute);
    const closedAt = setup.clock.now();
    await handle.close();
    const disconnected = await leaseOf(setup, member);
    expect(disconnected?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(closedAt.toISOString());
    expect(engine.describe({ namespace: setup.namespace, member, lease: disconnected })).toEqual({
      connected: false,
      disconnectedAt: closedAt.toISOString(),
      reclaimAt: new Date(closedAt.getTime() + grace).toISOString(),
      reclaimReason: 'disconnect-grace',
    });

    setup.clock.advance(grace - 1);
    expect(await engine.runPass()).toMatchObject({ desktops: 1, reclaimed: 0, errors: [] });
    expect(await leaseOf(setup, member)).toBeDefined();

    setup.clock.advance(1);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    expect(await leaseOf(setup, member)).toBeUndefined();
    await expectStopped(setup, member);
    expect(reclaimRecords(setup.audit)).toEqual([
      expect.objectContaining({ action: 'vdi reclaim (disconnect-grace)', user: reclaimActor, status: 'ok' }),
    ]);
    expect(setup.events).toContainEqual([
      'reclaimed',
      {
        desktopId: `vm/${setup.namespace}/${member}`,
        holder: 'user-1@example.com',
        reason: 'disconnect-grace',
      },
    ]);
  });

  it('keeps a desktop whose user reconnects within the grace, and starts a new grace at the next disconnect', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const engine = setup.engine();
    const identity = 'user-1@example.com';

    await (await engine.openConsole({ member, identity, kind: 'vnc' })).close();
    setup.clock.advance(10 * minute);
    const again = await engine.openConsole({ member, identity, kind: 'rdp' });
    setup.clock.advance(10 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, errors: [] });

    await again.close();
    setup.clock.advance(grace - 1);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    expect(await leaseOf(setup, member)).toBeDefined();
    setup.clock.advance(1);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1 });
    expect(await leaseOf(setup, member)).toBeUndefined();
  });

  it('writes the marks only when the first console opens and the last one closes', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const engine = setup.engine();
    const identity = 'user-1@example.com';
    const counts = setup.vdi.context.cluster.requestCounts;

    const first = await engine.openConsole({ member, identity, kind: 'vnc' });
    const updatesAfterFirst = counts.get('update') ?? 0;
    const second = await engine.openConsole({ member, identity, kind: 'terminal' });
    await first.close();
    await first.close();
    expect(counts.get('update') ?? 0).toBe(updatesAfterFirst);
    expect((await leaseOf(setup, member))?.metadata.annotations?.[disconnectedAtAnnotation]).toBeUndefined();

    await second.close();
    expect(counts.get('update') ?? 0).toBe(updatesAfterFirst + 1);
    expect((await leaseOf(setup, member))?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(
      setup.clock.now().toISOString(),
    );
  });

  it('resolves a second close of a handle only once the first has recorded the disconnect', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const engine = setup.engine();
    const handle = await engine.openConsole({ member, identity: 'user-1@example.com', kind: 'vnc' });
    // a host closes on both 'error' and 'close' of one socket, and reads the desktop after the second
    const first = handle.close();
    await handle.close();
    expect((await leaseOf(setup, member))?.metadata.annotations?.[disconnectedAtAnnotation]).toBe(
      setup.clock.now().toISOString(),
    );
    await first;
  });

  it('never reclaims by grace a desktop that never had a console', async () => {
    const setup = await setUp();
    const engine = setup.engine();
    for (let step = 0; step < 6; step += 1) {
      setup.clock.advance(10 * minute);
      expect(await engine.runPass()).toMatchObject({ desktops: 1, reclaimed: 0, errors: [] });
    }
    expect(await leaseOf(setup, setup.claimed[0] ?? '')).toBeDefined();
  });

  it('reclaims a claim at its maximum age although a console is open', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const engine = setup.engine({ policy: { disconnectGraceMs: grace, maxSessionMs: 120 * minute } });
    const handle = await engine.openConsole({ member, identity: 'user-1@example.com', kind: 'vnc' });

    // passes every 10 minutes, so the Lease is renewed on the way
    for (let elapsed = 10; elapsed < 120; elapsed += 10) {
      setup.clock.advance(10 * minute);
      expect(await engine.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    }
    setup.clock.advance(10 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(await leaseOf(setup, member)).toBeUndefined();
    await expectStopped(setup, member);
    expect(reclaimRecords(setup.audit)).toEqual([
      expect.objectContaining({ action: 'vdi reclaim (max-duration)', status: 'ok' }),
    ]);
    // the console of the reclaimed claim closes without touching anything
    const updates = setup.vdi.context.cluster.requestCounts.get('update') ?? 0;
    await handle.close();
    expect(setup.vdi.context.cluster.requestCounts.get('update') ?? 0).toBe(updates);
  });

  it('gives a desktop connected at a restart a full grace from the restart, and keeps the recorded time of one disconnected before', async () => {
    const setup = await setUp(2);
    const [connected = '', disconnected = ''] = setup.claimed;
    const before = setup.engine();
    before.start();
    await before.openConsole({ member: connected, identity: 'user-1@example.com', kind: 'vnc' });
    const closing = await before.openConsole({
      member: disconnected,
      identity: 'user-2@example.com',
      kind: 'vnc',
    });
    setup.clock.advance(minute);
    await closing.close();
    const disconnectedAt = setup.clock.now().getTime();
    // the process stops with the first console still open
    setup.clock.advance(10 * minute);
    await before.stop();

    setup.clock.advance(2 * minute);
    const restartedAt = setup.clock.now().getTime();
    const after = setup.engine({ processStartedAt: setup.clock.now() });
    expect(await after.runPass()).toMatchObject({ reclaimed: 0, errors: [] });

    // the one disconnected before the restart goes when its recorded grace ends
    setup.clock.set(new Date(disconnectedAt + grace));
    expect(await after.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(await leaseOf(setup, disconnected)).toBeUndefined();
    expect(await leaseOf(setup, connected)).toBeDefined();
    const view = after.describe({
      namespace: setup.namespace,
      member: connected,
      lease: await leaseOf(setup, connected),
    });
    expect(view).toMatchObject({
      connected: false,
      disconnectedAt: new Date(restartedAt).toISOString(),
      reclaimReason: 'disconnect-grace',
    });

    // the one connected at the restart keeps its desktop for a full grace from the restart
    setup.clock.set(new Date(restartedAt + grace - 1));
    expect(await after.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    expect(await leaseOf(setup, connected)).toBeDefined();
    setup.clock.set(new Date(restartedAt + grace));
    expect(await after.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(await leaseOf(setup, connected)).toBeUndefined();
  });

  it('keeps the claim when the stop fails, records the failure, and reclaims on a later pass', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const { cluster: kube } = setup.vdi.context;
    const engine = setup.engine();
    await kube.patchVm(setup.namespace, member, {
      metadata: { annotations: { [simulatorAnnotations.failStop]: '409 refused by the test' } },
    });
    await (await engine.openConsole({ member, identity: 'user-1@example.com', kind: 'vnc' })).close();
    setup.clock.advance(grace);

    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, failed: 1 });
    expect(await leaseOf(setup, member)).toBeDefined();
    expect(reclaimRecords(setup.audit)).toEqual([
      expect.objectContaining({
        action: 'vdi reclaim (disconnect-grace)',
        user: reclaimActor,
        status: 'error',
        error: expect.stringContaining('refused by the test'),
      }),
    ]);
    expect(setup.events).toContainEqual([
      'reclaim-failed',
      expect.objectContaining({ holder: 'user-1@example.com', reason: 'disconnect-grace' }),
    ]);

    setup.clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, failed: 1 });

    await kube.patchVm(setup.namespace, member, {
      metadata: { annotations: { [simulatorAnnotations.failStop]: null } },
    });
    setup.clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0 });
    expect(await leaseOf(setup, member)).toBeUndefined();
    await expectStopped(setup, member);
    expect(reclaimRecords(setup.audit).map((record) => record.status)).toEqual(['error', 'error', 'ok']);
  });

  it('leaves the holder a usable desktop when the stop is refused: a console opens, it starts, a claim returns it, and the next pass reclaims it', async () => {
    const setup = await setUp();
    const [member = ''] = setup.claimed;
    const { cluster: kube } = setup.vdi.context;
    const engine = setup.engine({ policy: { maxSessionMs: 30 * minute } });
    const holder = 'user-1@example.com';
    await kube.patchVm(setup.namespace, member, {
      metadata: { annotations: { [simulatorAnnotations.failStop]: '409 refused by the test' } },
    });
    setup.clock.advance(31 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, failed: 1 });
    expect(reclaimRecords(setup.audit)).toEqual([
      expect.objectContaining({
        action: 'vdi reclaim (max-duration)',
        status: 'error',
        error: expect.stringContaining('refused by the test'),
      }),
    ]);

    // the claim is as the holder had it: not marked, still theirs, and the member still presents it
    const kept = await leaseOf(setup, member);
    expect(kept?.spec.holderIdentity).toBe(holder);
    expect(kept?.metadata.annotations?.[releasingAnnotation]).toBeUndefined();
    expect((await kube.getVm(setup.namespace, member))?.metadata.annotations).toMatchObject({
      [assignedToKey]: holder,
    });
    const handle = await engine.openConsole({ member, identity: holder, kind: 'vnc' });
    expect(await setup.vdi.start({ member, identity: holder })).toMatchObject({ owner: holder });
    // KubeVirt's controllers may still be bringing the instance up when the start answers
    await waitFor(async () => (await kube.getVmi(setup.namespace, member))?.status?.phase, {
      describe: `${member} to run`,
      until: (phase) => phase === 'Running',
    });
    expect(await setup.vdi.claim({ pool: 'devpool', identity: holder })).toMatchObject({
      member,
      retried: true,
    });
    expect(handle.ended.aborted).toBe(false);

    // the next pass tries again and succeeds; the console ends once the member stopped
    await kube.patchVm(setup.namespace, member, {
      metadata: { annotations: { [simulatorAnnotations.failStop]: null } },
    });
    setup.clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0 });
    expect(await leaseOf(setup, member)).toBeUndefined();
    await expectStopped(setup, member);
    await waitFor(() => handle.ended.aborted, { describe: 'the console to end once the member stopped' });
    expect(reclaimRecords(setup.audit).map((record) => record.status)).toEqual(['error', 'ok']);
  });

  it('keeps a claim alive past its Lease hour while the engine runs, reading only the Leases in passes with nothing due', async () => {
    const setup = await setUp(3);
    const engine = setup.engine();
    const counts = setup.vdi.context.cluster.requestCounts;
    const total = () => setup.vdi.context.cluster.requestTotal;

    for (let elapsed = 0; elapsed < 180; elapsed += 5) {
      setup.clock.advance(5 * minute);
      const before = total();
      const updates = counts.get('update') ?? 0;
      const result = await engine.runPass();
      expect(result).toMatchObject({ desktops: 3, reclaimed: 0, errors: [] });
      // one list; a pass that renews also lists the members (VMs and VMIs) to renew only claims that have one
      expect(total() - before).toBe(1 + (result.renewed > 0 ? 2 : 0) + result.renewed);
      expect((counts.get('update') ?? 0) - updates).toBe(result.renewed);
    }
    for (const member of setup.claimed) {
      const lease = await leaseOf(setup, member);
      expect(lease).toBeDefined();
      expect(isLeaseExpired(lease!, setup.clock.now())).toBe(false);
    }
    // three hours, a renewal every twenty minutes
    expect(setup.events.filter(([name]) => name === 'renewed')).toHaveLength(3 * 9);
  });

  it('recreates an ephemeral member from its golden VM when it reclaims it', async () => {
    const namespace = await createTestNamespace(cluster(), 'sessions');
    const clock = createTestClock();
    const audit = new MemoryAuditSink();
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
    const kube = vdi.context.cluster;
    await kube.createVm(namespace, stoppedVm('golden'));
    await createPool(vdi.context, { name: 'ephpool', from: 'golden', size: 1, namespace, ephemeral: true });
    const { member } = await vdi.claim({ pool: 'ephpool', identity: 'alice@example.com' });
    // what the user left on the desktop must not survive the reclaim
    const used = await kube.patchVm(namespace, member, {
      metadata: { annotations: { 'example.com/left-behind': 'yes' } },
    });
    const engine = createSessionEngine(vdi.context, { namespaces: [namespace] });

    await (await engine.openConsole({ member, identity: 'alice@example.com', kind: 'terminal' })).close();
    clock.advance(grace);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });

    const recreated = await kube.getVm(namespace, member);
    expect(recreated?.metadata.uid).not.toBe(used.metadata.uid);
    expect(recreated?.metadata.annotations?.['example.com/left-behind']).toBeUndefined();
    expect(recreated?.metadata.annotations?.[sourceAnnotation]).toBe('golden');
    expect(recreated?.metadata.labels?.[ephemeralLabel]).toBe('true');
    expect(recreated?.spec.runStrategy).toBe('Halted');
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    expect(reclaimRecords(audit)).toEqual([
      expect.objectContaining({ action: 'vdi reclaim (disconnect-grace)', status: 'ok' }),
    ]);
  });

  it('refuses a console for a desktop that is not claimed or in a namespace it does not serve', async () => {
    const setup = await setUp();
    const engine = setup.engine();
    await setup.vdi.release({ member: setup.claimed[0] ?? '', identity: 'user-1@example.com' });
    await expect(
      engine.openConsole({ member: setup.claimed[0] ?? '', identity: 'user-1@example.com', kind: 'vnc' }),
    ).rejects.toMatchObject({
      code: 'CLAIM_ENDED',
    });
    await expect(
      engine.openConsole({ member: 'devpool-1', namespace: 'elsewhere', identity: 'a', kind: 'vnc' }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('places a claim whose Lease name is hashed by listing the pool members, and reclaims it', async () => {
    const namespace = await createTestNamespace(cluster(), 'sessions');
    const member = `devpool-${'x'.repeat(240)}`;
    const clock = createTestClock();
    const audit = new MemoryAuditSink();
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
    await vdi.context.cluster.createVm(namespace, stoppedVm(member, { 'corral.dev/vdi-pool': 'devpool' }));
    expect((await vdi.claim({ pool: 'devpool', identity: 'user-1@example.com' })).member).toBe(member);
    const [lease] = await vdi.context.cluster.listLeases(namespace);
    expect(lease?.metadata.name).not.toBe(`corral-vdi-${member}`);

    const engine = createSessionEngine(vdi.context, {
      namespaces: [namespace],
      policy: { disconnectGraceMs: grace },
    });
    const handle = await engine.openConsole({ member, identity: 'user-1@example.com', kind: 'vnc' });
    await handle.close();
    expect(await engine.runPass()).toMatchObject({ desktops: 1, reclaimed: 0, errors: [] });
    clock.advance(grace);
    expect(await engine.runPass()).toMatchObject({ desktops: 1, reclaimed: 1, failed: 0, errors: [] });
    expect(await vdi.context.cluster.listLeases(namespace)).toEqual([]);
  });
});
