import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { isVdiError } from '../../../src/errors.js';
import type { VdiEvents } from '../../../src/events.js';
import { inputAtAnnotation, reclaimNotifiedAnnotation, reclaimWarnedAnnotation } from '../../../src/keys.js';
import { configMapKind } from '../../../src/kube/resource-kinds.js';
import {
  createPool,
  deletePool,
  getPool,
  listPools,
  setPoolSettings,
} from '../../../src/pools/pool-service.js';
import { createSessionEngine, type SessionEngineOptions } from '../../../src/sessions/session-engine.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
const alice = 'alice@example.com';
const cluster = useSharedCluster();

interface Setup {
  namespace: string;
  vdi: Vdi;
  clock: TestClock;
  audit: MemoryAuditSink;
  events: Array<[string, unknown]>;
  member: string;
  engine(options?: Partial<SessionEngineOptions>): ReturnType<typeof createSessionEngine>;
}

async function setUp(
  prefix: string,
  pool: Omit<Parameters<typeof createPool>[1], 'name' | 'from' | 'size'> = {},
): Promise<Setup> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
  await vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
  await createPool(vdi.context, { name: 'devpool', from: 'golden', size: 1, namespace, ...pool });
  const events: Setup['events'] = [];
  for (const name of ['reclaimed', 'reclaim-notified', 'idle-warning'] as const) {
    vdi.events.on(name, (event: VdiEvents[typeof name][0]) => events.push([name, event]));
  }
  const { member } = await vdi.claim({ pool: 'devpool', identity: alice });
  const engine = (options: Partial<SessionEngineOptions> = {}) =>
    createSessionEngine(vdi.context, {
      namespaces: [namespace],
      policy: { disconnectGraceMs: grace },
      ...options,
    });
  return { namespace, vdi, clock, audit, events, member, engine };
}

async function leaseOf({ vdi, namespace, member }: Setup) {
  return await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
}

// a console opened and closed, then the grace passes
async function abandon(setup: Setup, engine: ReturnType<typeof createSessionEngine>): Promise<void> {
  const handle = await engine.openConsole({ member: setup.member, identity: alice, kind: 'vnc' });
  setup.clock.advance(minute);
  await handle.close();
  setup.clock.advance(grace);
}

/** A webhook receiver on 127.0.0.1 that keeps every JSON body it is sent. */
async function startReceiver() {
  const bodies: unknown[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => {
      bodies.push({ method: request.method, type: request.headers['content-type'], body: JSON.parse(text) });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, bodies, close: () => new Promise((r) => server.close(r)) };
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('per-pool reclaim actions', () => {
  it('stops a persistent desktop with the stop action, shown in the pool list', async () => {
    const setup = await setUp('action-stop', { reclaimAction: 'stop' });
    const [pool] = await listPools(setup.vdi.context, { namespaces: [setup.namespace] });
    expect(pool).toMatchObject({ reclaimAction: 'stop', settings: { reclaimAction: 'stop' } });
    const engine = setup.engine();
    await abandon(setup, engine);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, notified: 0, errors: [] });
    expect(await leaseOf(setup)).toBeUndefined();
    expect((await setup.vdi.context.cluster.getVm(setup.namespace, setup.member))?.spec.runStrategy).toBe(
      'Halted',
    );
  });

  it('recreates an ephemeral desktop with the recreate action', async () => {
    const setup = await setUp('action-recreate', { ephemeral: true, reclaimAction: 'recreate' });
    const before = await setup.vdi.context.cluster.getVm(setup.namespace, setup.member);
    const engine = setup.engine();
    await abandon(setup, engine);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    const after = await setup.vdi.context.cluster.getVm(setup.namespace, setup.member);
    expect(after?.metadata.uid).toBeDefined();
    expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
  });

  it('notifies once through the event and the webhook, keeps the claim, and marks the Lease', async () => {
    const receiver = await startReceiver();
    closers.push(receiver.close);
    const setup = await setUp('action-notify');
    const set = await setPoolSettings(setup.vdi.context, {
      name: 'devpool',
      reclaimAction: 'notify',
      reclaimWebhook: receiver.url,
      allowLoopbackHttpWebhook: true,
    });
    expect(set.reclaimAction).toBe('notify');
    const engine = setup.engine();
    await abandon(setup, engine);
    const dueAt = setup.clock.now().toISOString();
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, notified: 1, errors: [] });

    const desktopId = `vm/${setup.namespace}/${setup.member}`;
    const facts = { desktopId, pool: 'devpool', holder: alice, reason: 'disconnect-grace', dueAt };
    expect(receiver.bodies).toEqual([
      { method: 'POST', type: 'application/json', body: { event: 'reclaim-notified', ...facts } },
    ]);
    expect(setup.events).toEqual([['reclaim-notified', { ...facts, webhook: { ok: true, status: 204 } }]]);
    const lease = await leaseOf(setup);
    expect(lease?.spec.holderIdentity).toBe(alice);
    expect(lease?.metadata.annotations?.[reclaimNotifiedAnnotation]).toBe(`disconnect-grace ${dueAt}`);
    expect(setup.audit.list()).toContainEqual(
      expect.objectContaining({ action: 'vdi reclaim notify', status: 'ok' }),
    );

    // later passes keep the claim alive without reporting it again
    setup.clock.advance(30 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, notified: 0, renewed: 1, errors: [] });
    expect(receiver.bodies).toHaveLength(1);
    expect((await setup.vdi.claim({ pool: 'devpool', identity: alice })).member).toBe(setup.member);

    // a broker that stopped between the POST and the mark left no mark: the next pass reports it again
    const marked = await leaseOf(setup);
    const { [reclaimNotifiedAnnotation]: _mark, ...annotations } = marked?.metadata.annotations ?? {};
    await setup.vdi.context.cluster.replaceLease(setup.namespace, {
      ...marked!,
      metadata: { ...marked!.metadata, annotations },
    });
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, notified: 1, errors: [] });
    expect(receiver.bodies).toHaveLength(2);
    expect((await leaseOf(setup))?.metadata.annotations?.[reclaimNotifiedAnnotation]).toBe(
      `disconnect-grace ${dueAt}`,
    );
  });

  it('refuses bad settings with INVALID_INPUT and writes nothing', async () => {
    const setup = await setUp('action-bad');
    const { context } = setup.vdi;
    const refused = async (options: Omit<Parameters<typeof setPoolSettings>[1], 'name'>) => {
      const error = await setPoolSettings(context, { name: 'devpool', ...options }).catch((caught) => caught);
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
      return (error as Error).message;
    };
    expect(await refused({ reclaimAction: 'hibernate' as never })).toMatch(/not known/);
    expect(await refused({ reclaimAction: 'recreate' })).toMatch(/persistent/);
    expect(await refused({ reclaimAction: 'notify', reclaimWebhook: 'http://hooks.example.com/x' })).toMatch(
      /not https/,
    );
    expect(await refused({ reclaimAction: 'notify', reclaimWebhook: 'http://127.0.0.1:9/x' })).toMatch(
      /only when allowed/,
    );
    expect(await refused({ idleTimeoutMs: -5 })).toMatch(/Idle timeout/);
    expect(
      await context.cluster.resource(configMapKind).in(setup.namespace).get('corral-vdi-pool-devpool'),
    ).toBeUndefined();

    const created = await createPool(context, {
      name: 'other',
      from: 'golden',
      size: 1,
      reclaimAction: 'notify',
      reclaimWebhook: 'ftp://hooks.example.com',
    }).catch((caught) => caught);
    expect(isVdiError(created, 'INVALID_INPUT')).toBe(true);
    expect(await context.cluster.getVm(setup.namespace, 'other-1')).toBeUndefined();
    expect(
      await context.cluster.resource(configMapKind).in(setup.namespace).get('corral-vdi-pool-other'),
    ).toBeUndefined();
  });

  it('keeps settings left out of a change, and removes them with the pool', async () => {
    const setup = await setUp('action-keep', { idleTimeoutMs: 20 * minute });
    const { context } = setup.vdi;
    await setPoolSettings(context, { name: 'devpool', reclaimAction: 'notify' });
    expect((await getPool(context, { name: 'devpool' })).settings).toEqual({
      reclaimAction: 'notify',
      idleTimeoutMs: 20 * minute,
    });
    await deletePool(context, { name: 'devpool', force: true });
    expect(
      await context.cluster.resource(configMapKind).in(setup.namespace).get('corral-vdi-pool-devpool'),
    ).toBeUndefined();
  });
});

describe('input-idle reclaim', () => {
  const idle = { disconnectGraceMs: grace, idleTimeoutMs: 30 * minute, idleWarningMs: 5 * minute };

  it('warns before the idle timeout and then reclaims a desktop whose broker console carried no input', async () => {
    const setup = await setUp('idle-reclaim');
    const engine = setup.engine({ policy: idle });
    await engine.openConsole({ member: setup.member, identity: alice, kind: 'vnc' });
    const connectedAt = setup.clock.now().getTime();

    setup.clock.advance(24 * minute);
    expect(await engine.runPass()).toMatchObject({ warned: 0, reclaimed: 0 });
    setup.clock.advance(2 * minute);
    expect(await engine.runPass()).toMatchObject({ warned: 1, reclaimed: 0, errors: [] });
    const idleAt = new Date(connectedAt + 30 * minute).toISOString();
    expect((await leaseOf(setup))?.metadata.annotations?.[reclaimWarnedAnnotation]).toBe(`idle ${idleAt}`);
    expect(
      engine.describe({ namespace: setup.namespace, member: setup.member, lease: await leaseOf(setup) }),
    ).toMatchObject({
      reclaimAt: idleAt,
      reclaimReason: 'idle',
      idleWarning: true,
    });
    // warned once
    expect(await engine.runPass()).toMatchObject({ warned: 0 });

    setup.clock.advance(4 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    const desktopId = `vm/${setup.namespace}/${setup.member}`;
    expect(setup.events).toEqual([
      ['idle-warning', { desktopId, holder: alice, idleAt }],
      ['reclaimed', { desktopId, holder: alice, reason: 'idle' }],
    ]);
    expect(await leaseOf(setup)).toBeUndefined();
  });

  it('is put off by input, which the Lease carries to another replica', async () => {
    const setup = await setUp('idle-input');
    const engine = setup.engine({ policy: idle, inputMarkIntervalMs: minute });
    await engine.openConsole({ member: setup.member, identity: alice, kind: 'vnc' });
    setup.clock.advance(20 * minute);
    engine.noteInput({ namespace: setup.namespace, member: setup.member });
    const typedAt = setup.clock.now().toISOString();
    await waitForMark(setup, typedAt);

    // a second replica with no console of its own reads the input from the Lease; without a grace, only idle counts
    const replica = setup.engine({ policy: { ...idle, disconnectGraceMs: 0 } });
    setup.clock.advance(29 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, warned: 1 });
    expect(await replica.runPass()).toMatchObject({ reclaimed: 0 });
    setup.clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1 });
  });

  it('writes the input mark at most once per interval, and the rest on a later pass', async () => {
    const setup = await setUp('idle-throttle');
    const engine = setup.engine({ policy: idle, inputMarkIntervalMs: minute });
    await engine.openConsole({ member: setup.member, identity: alice, kind: 'vnc' });
    engine.noteInput({ namespace: setup.namespace, member: setup.member });
    const first = setup.clock.now().toISOString();
    await waitForMark(setup, first);
    const version = (await leaseOf(setup))?.metadata.resourceVersion;
    setup.clock.advance(10_000);
    engine.noteInput({ namespace: setup.namespace, member: setup.member });
    const second = setup.clock.now().toISOString();
    await engine.runPass();
    expect((await leaseOf(setup))?.metadata.resourceVersion).toBe(version);
    setup.clock.advance(minute);
    await engine.runPass();
    expect((await leaseOf(setup))?.metadata.annotations?.[inputAtAnnotation]).toBe(second);
  });

  it('never idle-reclaims a desktop without a broker console, as its user may be on a native client', async () => {
    const setup = await setUp('idle-native');
    const engine = setup.engine({ policy: idle });
    setup.clock.advance(10 * 60 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, warned: 0, errors: [] });
    expect((await leaseOf(setup))?.spec.holderIdentity).toBe(alice);
  });

  it('takes the pool idle timeout over the broker one, and 0 turns it off for the pool', async () => {
    const setup = await setUp('idle-pool', { idleTimeoutMs: 0 });
    const engine = setup.engine({ policy: idle });
    await engine.openConsole({ member: setup.member, identity: alice, kind: 'vnc' });
    setup.clock.advance(50 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, renewed: 1, errors: [] });
    await setPoolSettings(setup.vdi.context, { name: 'devpool', idleTimeoutMs: 60 * minute });
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    setup.clock.advance(10 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
  });
});

async function waitForMark(setup: Setup, at: string): Promise<void> {
  await waitFor(() => leaseOf(setup), {
    describe: `the input mark ${at} on the Lease of ${setup.member}`,
    until: (lease) => lease?.metadata.annotations?.[inputAtAnnotation] === at,
  });
}
