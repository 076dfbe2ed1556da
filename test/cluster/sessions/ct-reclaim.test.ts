import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { VdiEvents } from '../../../src/events.js';
import { leaseKindLabel, reclaimNotifiedAnnotation } from '../../../src/keys.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { createSessionEngine, type SessionEngineOptions } from '../../../src/sessions/session-engine.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
const alice = 'alice@example.com';
const cluster = useSharedCluster();

async function setUp(
  prefix: string,
  spec: Record<string, unknown> = {},
  options: { allowLoopbackHttpWebhook?: boolean; policy?: SessionEngineOptions['policy'] } = {},
) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const vdi = createVdi({
    kubeConfig: cluster().kubeConfig,
    namespace,
    clock,
    retry: { retries: 1, minDelayMs: 10 },
  });
  const events: Array<VdiEvents['reclaimed'][0]> = [];
  vdi.events.on('reclaimed', (event) => events.push(event));
  const notified: Array<VdiEvents['reclaim-notified'][0]> = [];
  vdi.events.on('reclaim-notified', (event) => notified.push(event));
  await vdi.applyCtPool({
    spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1, ...spec },
    ...(options.allowLoopbackHttpWebhook ? { allowLoopbackHttpWebhook: true } : {}),
  });
  await vdi.reconcileCtPool({ name: 'devbox' });
  await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
    describe: `Pod ${namespace}/devbox-1 to be Ready`,
    until: (pod) => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
  const claimed = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
  const engine = createSessionEngine(vdi.context, {
    namespaces: [namespace],
    policy: options.policy ?? { disconnectGraceMs: grace },
  });
  const uid = (await vdi.context.cluster.resource(podKind).in(namespace).get(claimed.member))?.metadata.uid;
  return { namespace, clock, vdi, events, notified, engine, member: claimed.member, uid };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

// a terminal opened and closed, then the grace passes
async function abandon({ engine, clock, member, namespace }: Setup): Promise<void> {
  const handle = await engine.openConsole({ member, identity: alice, kind: 'terminal' });
  expect(handle.desktopId).toBe(`ct/${namespace}/${member}`);
  clock.advance(minute);
  await handle.close();
  clock.advance(grace);
}

async function expectRecreated(setup: Setup): Promise<void> {
  const { vdi, namespace, member, uid } = setup;
  expect(await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  const pod = await vdi.context.cluster.resource(podKind).in(namespace).get(member);
  expect(pod?.metadata.uid).toBeDefined();
  expect(pod?.metadata.uid).not.toBe(uid);
  expect(setup.events).toEqual([
    { desktopId: `ct/${namespace}/${member}`, holder: alice, reason: 'disconnect-grace' },
  ]);
}

describe('reclaiming container desktops', () => {
  it('records the kind on the claim and reclaims a container desktop through its backend, making its Pod again', async () => {
    const setup = await setUp('ct-reclaim');
    const lease = await setup.vdi.context.cluster.getLease(setup.namespace, `corral-vdi-${setup.member}`);
    expect(lease?.metadata.labels?.[leaseKindLabel]).toBe('ct');
    await abandon(setup);
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    await expectRecreated(setup);
  });

  it('finds the kind of a claim written before claims recorded it from the member itself', async () => {
    const setup = await setUp('ct-reclaim-old');
    const { cluster: kube } = setup.vdi.context;
    const lease = await kube.getLease(setup.namespace, `corral-vdi-${setup.member}`);
    const { [leaseKindLabel]: _kind, ...labels } = lease?.metadata.labels ?? {};
    await kube.replaceLease(setup.namespace, { ...lease!, metadata: { ...lease!.metadata, labels } });
    await abandon(setup);
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    await expectRecreated(setup);
  });
});

/** A webhook receiver on 127.0.0.1 that keeps every JSON body it is sent. */
async function startReceiver() {
  const bodies: unknown[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => {
      bodies.push(JSON.parse(text));
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

describe('reclaim actions of container pools', () => {
  it('notifies through the event and the webhook and keeps the claim and its Pod', async () => {
    const receiver = await startReceiver();
    closers.push(receiver.close);
    const setup = await setUp(
      'ct-notify',
      { reclaimAction: 'notify', reclaimWebhook: receiver.url },
      { allowLoopbackHttpWebhook: true },
    );
    const { vdi, namespace, member } = setup;
    expect(await vdi.getCtPool({ name: 'devbox' })).toMatchObject({
      reclaimAction: 'notify',
      spec: { reclaimAction: 'notify', reclaimWebhook: receiver.url },
    });
    await abandon(setup);
    const dueAt = setup.clock.now().toISOString();
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 0, notified: 1, failed: 0, errors: [] });

    const facts = {
      desktopId: `ct/${namespace}/${member}`,
      pool: 'devbox',
      holder: alice,
      reason: 'disconnect-grace',
      dueAt,
    };
    expect(receiver.bodies).toEqual([{ event: 'reclaim-notified', ...facts }]);
    expect(setup.notified).toEqual([{ ...facts, webhook: { ok: true, status: 204 } }]);
    expect(setup.events).toEqual([]);
    const lease = await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.spec.holderIdentity).toBe(alice);
    expect(lease?.metadata.annotations?.[reclaimNotifiedAnnotation]).toBe(`disconnect-grace ${dueAt}`);
    expect((await vdi.context.cluster.resource(podKind).in(namespace).get(member))?.metadata.uid).toBe(
      setup.uid,
    );

    // reported once: later passes renew the claim
    setup.clock.advance(30 * minute);
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 0, notified: 0, renewed: 1, errors: [] });
    expect(receiver.bodies).toHaveLength(1);
  });

  it("takes the pool's idle timeout over the broker's, and 0 turns it off for the pool", async () => {
    const idle = { disconnectGraceMs: grace, idleTimeoutMs: 30 * minute, idleWarningMs: 5 * minute };
    const setup = await setUp('ct-idle', { idleTimeoutMs: 0 }, { policy: idle });
    const { engine, clock, vdi } = setup;
    await engine.openConsole({ member: setup.member, identity: alice, kind: 'terminal' });
    clock.advance(50 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, warned: 0, renewed: 1, errors: [] });

    await vdi.applyCtPool({
      spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1, idleTimeoutMs: 60 * minute },
    });
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    clock.advance(10 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(setup.events).toEqual([
      { desktopId: `ct/${setup.namespace}/${setup.member}`, holder: alice, reason: 'idle' },
    ]);
  });
});
