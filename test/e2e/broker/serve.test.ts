import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import type { IdentityProvider } from '../../../src/broker/identity.js';
import { serveBroker } from '../../../src/broker/serve.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe('serveBroker', () => {
  it('shuts down on SIGTERM: the request in flight finishes and the claim outlives the shutdown', async () => {
    const namespace = await createTestNamespace(cluster(), 'serve');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const vdi = createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock,
      audit: new MemoryAuditSink(),
    });
    const claimed = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });

    // an identity provider that holds the request until the test lets it go, so it is surely in flight
    let letGo: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let arrived: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const gate: IdentityProvider = {
      name: 'gate',
      identify: async ({ headers }) => {
        arrived();
        await held;
        return headers.get('x-user') ?? undefined;
      },
    };
    const server = await serveBroker({
      vdi,
      identity: [gate],
      namespaces: [namespace],
      admins: ['admin@example.com'],
      disconnectGraceMs: 1,
      listen: '127.0.0.1:0',
      log: () => {},
    });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const consoleHandle = await server.broker.authorizeConsole({
      desktopId: claimed.id,
      identity: 'alice@example.com',
      kind: 'vnc',
    });

    const reply = fetch(`${server.url}/api/vdi/desktops`, { headers: { 'x-user': 'alice@example.com' } });
    await inFlight;
    process.emit('SIGTERM');
    let closed = false;
    void server.closed.then(() => {
      closed = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);

    letGo();
    const response = await reply;
    expect(response.status).toBe(200);
    expect(
      ((await response.json()) as { desktops: Array<{ id: string }> }).desktops.map((d) => d.id),
    ).toEqual([claimed.id]);
    await server.closed;
    expect(process.listeners('SIGTERM')).toHaveLength(0);
    await expect(fetch(`${server.url}/api/vdi/pools`)).rejects.toThrow();

    // the console was open at shutdown and the grace is 1 ms, yet the claim stays
    await consoleHandle.close();
    expect(await vdi.context.cluster.getLease(namespace, `corral-vdi-${claimed.member}`)).toBeDefined();
    expect((await vdi.getDesktop({ member: claimed.member })).owner).toBe('alice@example.com');
  });

  it('fails /readyz at once when a shutdown begins, and runs the shutdown hooks in order after the session engine stopped', async () => {
    const namespace = await createTestNamespace(cluster(), 'serve');
    const server = await serveBroker({
      identity: [{ name: 'none', identify: async () => undefined }],
      kubeConfig: cluster().kubeConfig,
      namespaces: [namespace],
      listen: '127.0.0.1:0',
      handleSignals: false,
      log: () => {},
    });
    // ready once its watch caches hold their first lists
    await waitFor(async () => (await fetch(`${server.url}/readyz`)).status, {
      describe: 'the broker to report ready',
      until: (status) => status === 200,
    });
    const leader = async () =>
      (await server.broker.metrics.registry.getSingleMetricAsString('corral_vdi_leader')).trim().slice(-1);
    expect(await leader()).toBe('1');
    const steps: string[] = [];
    server.onShutdown(async () => {
      // the broker stopped before the hooks: the engine set the leader gauge to 0 once it stopped
      steps.push(`release the leader Lease (leader ${await leader()})`);
    });
    server.onShutdown(async () => {
      steps.push('a failing hook');
      throw new Error('the Lease is gone already');
    });
    server.onShutdown(async () => {
      steps.push('the last hook');
    });

    const closing = server.close();
    const readyz = await server.broker.fetch(new Request(`${server.url}/readyz`));
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toMatchObject({ error: { code: 'NOT_READY' } });
    await closing;
    expect(steps).toEqual(['release the leader Lease (leader 0)', 'a failing hook', 'the last hook']);
  });

  it('stops waiting for a shutdown hook after shutdownTimeoutMs, says so, and closes', async () => {
    const namespace = await createTestNamespace(cluster(), 'serve');
    const logs: string[] = [];
    const server = await serveBroker({
      identity: [{ name: 'none', identify: async () => undefined }],
      kubeConfig: cluster().kubeConfig,
      namespaces: [namespace],
      listen: '127.0.0.1:0',
      handleSignals: false,
      shutdownTimeoutMs: 200,
      log: (line) => logs.push(line),
    });
    server.onShutdown(() => new Promise<void>(() => {}));
    await server.close();
    expect(logs).toContainEqual(expect.stringContaining('the shutdown still waited after 200 ms'));
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('refuses a listen address that is not host:port', async () => {
    await expect(serveBroker({ identity: [], listen: 'localhost' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('refuses a metrics address that is not host:port and a negative shutdown bound before it listens', async () => {
    await expect(
      serveBroker({ identity: [], listen: '127.0.0.1:0', metricsListen: '9090' }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"9090" is not host:port'),
    });
    await expect(
      serveBroker({ identity: [], listen: '127.0.0.1:0', shutdownTimeoutMs: -1 }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('shutdownTimeoutMs') });
  });
});
