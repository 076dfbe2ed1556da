import { describe, expect, it } from 'vitest';
import { createBroker } from '../../../src/broker/broker.js';
import { authGatewayIdentity, tailscaleIdentity } from '../../../src/broker/identity.js';
import { buildOpenApiDocument } from '../../../src/broker/openapi.js';
import {
  claimedDesktopSchema,
  connectAnswerSchema,
  desktopSchema,
  taskSchema,
} from '../../../src/broker/schemas.js';
import { isVdiError } from '../../../src/errors.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { admin, peerToken, type RunningBroker, type startBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const minute = 60_000;

const brokers = useBrokers();

interface Setup {
  namespace: string;
  clock: TestClock;
  members: string[];
  api: RunningBroker;
}

async function setUp(size = 2, options: Parameters<typeof startBroker>[3] = {}): Promise<Setup> {
  const namespace = await createTestNamespace(cluster(), 'broker');
  const members = await createPoolMembers(cluster(), namespace, 'devpool', size);
  const clock = createTestClock(new Date());
  const api = await brokers.start(cluster(), namespace, clock, options);
  return { namespace, clock, members, api };
}

const claimPath = (namespace: string, pool = 'devpool') => `/api/vdi/pools/vm/${namespace}/${pool}/claim`;
const desktopPath = (namespace: string, member: string) => `/api/vdi/desktops/vm/${namespace}/${member}`;

async function waitForTask(api: RunningBroker, id: string, as: string) {
  await expect
    .poll(async () => (await api.call('GET', `/api/tasks/${id}`, { as })).body.status, { timeout: 20_000 })
    .not.toBe('running');
  return (await api.call('GET', `/api/tasks/${id}`, { as })).body;
}

/** What the broker could change in a namespace: the Leases, and the VMs' spec and metadata (their status is the simulator's). */
async function clusterState({ api, namespace }: Pick<Setup, 'api' | 'namespace'>): Promise<unknown[]> {
  const { cluster: kube } = api.vdi.context;
  const [vms, leases] = await Promise.all([kube.listVms(namespace), kube.listLeases(namespace)]);
  return [
    ...vms.map(({ metadata: { name, generation, labels, annotations }, spec }) => ({
      name,
      generation,
      labels,
      annotations,
      spec,
    })),
    ...leases.map(({ metadata: { name, resourceVersion } }) => ({ name, resourceVersion })),
  ];
}

describe('the broker over HTTP', () => {
  it('answers every route 401 for an anonymous caller and 403 for a peer service token', async () => {
    const { api, namespace, members } = await setUp(1);
    const routes: Array<[string, string]> = [
      ['GET', '/api/vdi/pools'],
      ['POST', claimPath(namespace)],
      ['GET', '/api/vdi/desktops'],
      ['GET', desktopPath(namespace, members[0] ?? '')],
      ['POST', `${desktopPath(namespace, members[0] ?? '')}/start`],
      ['POST', `${desktopPath(namespace, members[0] ?? '')}/release`],
      ['GET', `${desktopPath(namespace, members[0] ?? '')}/connect`],
      ['GET', '/api/vdi/openapi.json'],
      ['GET', '/api/tasks/vdi-release-x-1'],
      ['GET', '/api/tasklog'],
    ];
    const before = await clusterState({ api, namespace });
    for (const [method, path] of routes) {
      const anonymous = await api.call(method, path);
      expect(anonymous.status, `${method} ${path}`).toBe(401);
      expect(anonymous.body.error.code).toBe('UNAUTHENTICATED');
      const service = await api.call(method, path, { headers: { authorization: `Bearer ${peerToken}` } });
      expect(service.status, `${method} ${path}`).toBe(403);
      expect(service.body.error.code).toBe('FORBIDDEN');
      // the peer token wins over a user header sent along with it
      const both = await api.call(method, path, {
        as: alice,
        headers: { authorization: `Bearer ${peerToken}` },
      });
      expect(both.status).toBe(403);
    }
    expect(await clusterState({ api, namespace })).toEqual(before);
  });

  it('lets a user claim, read, start, connect to and release a desktop, and keeps others out', async () => {
    const { api, namespace } = await setUp(2);
    const claim = await api.call('POST', claimPath(namespace), { as: alice });
    expect(claim.status).toBe(200);
    const desktop = claimedDesktopSchema.parse(claim.body);
    expect(desktop).toMatchObject({
      poolId: `vm/${namespace}/devpool`,
      owner: alice,
      retried: false,
      connected: false,
      reclaimAt: null,
    });
    expect(desktop.id).toBe(`vm/${namespace}/${desktop.member}`);
    expect(desktop.sessionId).not.toBe('');
    expect(desktop.startError).toBeUndefined();
    const path = desktopPath(namespace, desktop.member);

    const retry = await api.call('POST', claimPath(namespace), { as: alice });
    expect(retry.body).toMatchObject({ id: desktop.id, sessionId: desktop.sessionId, retried: true });

    const pools = await api.call('GET', '/api/vdi/pools', { as: bob });
    expect(pools.body).toEqual({
      pools: [
        {
          id: `vm/${namespace}/devpool`,
          kind: 'vm',
          namespace,
          name: 'devpool',
          members: 2,
          claimed: 1,
          free: 1,
          schedule: null,
          rollOut: null,
        },
      ],
    });

    expect(
      (await api.call('GET', '/api/vdi/desktops', { as: alice })).body.desktops.map(
        (d: { id: string }) => d.id,
      ),
    ).toEqual([desktop.id]);
    expect((await api.call('GET', '/api/vdi/desktops', { as: bob })).body).toEqual({ desktops: [] });
    const everyone = await api.call('GET', '/api/vdi/desktops?all=1', { as: bob });
    expect([everyone.status, everyone.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect((await api.call('GET', '/api/vdi/desktops?all=1', { as: admin })).body.desktops).toHaveLength(1);

    const mine = await api.call('GET', path, { as: alice });
    expect(desktopSchema.parse(mine.body)).toMatchObject({
      id: desktop.id,
      owner: alice,
      sessionId: desktop.sessionId,
    });
    expect((await api.call('GET', path, { as: admin })).status).toBe(200);
    for (const [method, suffix] of [
      ['GET', ''],
      ['POST', '/start'],
      ['GET', '/connect'],
      ['POST', '/release'],
    ] as const) {
      const other = await api.call(method, `${path}${suffix}`, { as: bob });
      expect([other.status, other.body.error.code], `${method} ${suffix}`).toEqual([403, 'NOT_HOLDER']);
    }

    const started = await api.call('POST', `${path}/start`, { as: alice });
    expect(started.status).toBe(200);
    expect(desktopSchema.parse(started.body).id).toBe(desktop.id);

    await expect
      .poll(async () => (await api.vdi.context.cluster.getVmi(namespace, desktop.member))?.status?.phase, {
        timeout: 20_000,
      })
      .toBe('Running');
    const answer = await api.call('GET', `${path}/connect`, { as: alice });
    expect(answer.status).toBe(200);
    const connect = connectAnswerSchema.parse(answer.body);
    expect(connect).toMatchObject({
      desktopId: desktop.id,
      holder: alice,
      target: { protocol: 'vnc', vm: desktop.member },
    });
    expect(connect.skipped.map((skipped) => skipped.protocol)).toContain('rdp');

    const release = await api.call('POST', `${path}/release`, { as: alice });
    expect(release.status).toBe(202);
    expect(release.body).toEqual({
      desktop: desktop.id,
      task: expect.stringMatching(new RegExp(`^vdi-release-${namespace}-${desktop.member}-`)),
    });
    expect((await api.call('GET', `/api/tasks/${release.body.task}`, { as: bob })).status).toBe(404);
    const task = taskSchema.parse(await waitForTask(api, release.body.task, alice));
    expect(task).toMatchObject({
      status: 'done',
      action: 'vdi release',
      desktop: desktop.id,
      user: alice,
      error: null,
    });
    expect(await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${desktop.member}`)).toBeUndefined();
    const ended = await api.call('GET', path, { as: alice });
    expect([ended.status, ended.body.error.code]).toEqual([404, 'CLAIM_ENDED']);

    const log = await api.call('GET', '/api/tasklog', { as: alice });
    expect(log.body.records.map((record: { action: string }) => record.action)).toEqual([
      'vdi claim',
      'vdi claim',
      'vdi start',
      'vdi release',
    ]);
    expect((await api.call('GET', '/api/tasklog', { as: bob })).body).toEqual({ records: [] });
  });

  it('releases only the claim its access check read: a claim made again before the release runs is kept', async () => {
    const namespace = await createTestNamespace(cluster(), 'broker');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const base = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    let again: { sessionId: string } | undefined;
    // between the broker's read and the release, the desktop is released and claimed again by its holder
    const vdi: Vdi = {
      ...base,
      async release(options) {
        await base.release({ member: options.member, identity: alice });
        again = await base.claim({ pool: 'devpool', identity: alice });
        return await base.release(options);
      },
    };
    const api = await brokers.start(cluster(), namespace, clock, { vdi });
    const desktop = (await api.call('POST', claimPath(namespace), { as: alice })).body;

    const release = await api.call('POST', `${desktopPath(namespace, desktop.member)}/release`, {
      as: alice,
    });

    expect(await waitForTask(api, release.body.task, alice)).toMatchObject({
      status: 'error',
      error: { code: 'CLAIM_CHANGED' },
    });
    const lease = await base.context.cluster.getLease(namespace, `corral-vdi-${desktop.member}`);
    expect(lease?.metadata.annotations?.['corral.dev/vdi-session-id']).toBe(again?.sessionId);
  });

  it('lets an admin force-release another user’s desktop, and the task log names the holder', async () => {
    const { api, namespace } = await setUp(1);
    const desktop = (await api.call('POST', claimPath(namespace), { as: alice })).body;
    const release = await api.call('POST', `${desktopPath(namespace, desktop.member)}/release`, {
      as: admin,
    });
    expect(release.status).toBe(202);
    expect(await waitForTask(api, release.body.task, admin)).toMatchObject({
      status: 'done',
      action: 'vdi force-release',
    });
    const records = (await api.call('GET', '/api/tasklog', { as: admin })).body.records;
    expect(records).toContainEqual(
      expect.objectContaining({
        action: 'vdi force-release',
        user: admin,
        status: 'ok',
        target: expect.stringContaining(alice),
      }),
    );
    expect(
      records.find((record: { action: string }) => record.action === 'vdi force-release').target,
    ).toContain(desktop.id);
    expect(
      (await api.call('GET', '/api/tasklog', { as: alice })).body.records.map(
        (r: { action: string }) => r.action,
      ),
    ).toEqual(['vdi claim']);
  });

  it('gives the last member to exactly one of two users racing for it', async () => {
    const { api, namespace } = await setUp(1);
    const replies = await Promise.all(
      [alice, bob].map((as) => api.call('POST', claimPath(namespace), { as })),
    );
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 409]);
    const lost = replies.find((reply) => reply.status === 409);
    expect(lost?.body.error.code).toBe('NO_FREE_MEMBER');
    const won = replies.find((reply) => reply.status === 200);
    expect([alice, bob]).toContain(won?.body.owner);
  });

  it('takes the caller only from the pipeline: a body or query naming another user changes nothing', async () => {
    const { api, namespace } = await setUp(2);
    const spoof = JSON.stringify({ identity: bob, user: bob, owner: bob, asAdmin: true });
    const claim = await api.call('POST', `${claimPath(namespace)}?identity=${bob}&user=${bob}&as=${admin}`, {
      as: alice,
      body: spoof,
    });
    expect([claim.status, claim.body.owner]).toEqual([200, alice]);
    const path = desktopPath(namespace, claim.body.member);
    expect(
      (await api.call('GET', `/api/vdi/desktops?identity=${alice}&user=${alice}`, { as: bob })).body,
    ).toEqual({ desktops: [] });
    const release = await api.call('POST', `${path}/release?identity=${alice}`, {
      as: bob,
      body: JSON.stringify({ identity: alice }),
    });
    expect([release.status, release.body.error.code]).toEqual([403, 'NOT_HOLDER']);
    expect((await api.call('GET', path, { as: alice })).body.owner).toBe(alice);
  });

  it('ignores identity headers its providers do not trust', async () => {
    const { api } = await setUp(1, {
      identity: [
        tailscaleIdentity({ trustHeaders: false }),
        authGatewayIdentity({ trustedProxies: ['10.9.9.9'] }),
      ],
    });
    const reply = await api.call('GET', '/api/vdi/desktops', {
      as: alice,
      headers: { 'X-Auth-Request-Email': alice },
    });
    expect([reply.status, reply.body.error.code]).toEqual([401, 'UNAUTHENTICATED']);
  });

  it('trusts an auth gateway header from a trusted proxy address', async () => {
    const { api } = await setUp(1, {
      identity: [authGatewayIdentity({ header: 'X-Forwarded-Email', trustedProxies: ['127.0.0.1'] })],
    });
    const reply = await api.call('GET', '/api/vdi/desktops', { headers: { 'X-Forwarded-Email': alice } });
    expect([reply.status, reply.body]).toEqual([200, { desktops: [] }]);
  });

  it('answers bad input with a clear 4xx and changes nothing in the cluster', async () => {
    const setup = await setUp(1);
    const { api, namespace } = setup;
    const held = (await api.call('POST', claimPath(namespace), { as: alice })).body;
    const member = held.member as string;
    const before = await clusterState(setup);
    const cases: Array<[string, string, string | undefined, number, string]> = [
      ['POST', `/api/vdi/desktops/vm/${namespace}/../${member}/release`, undefined, 400, 'path traversal'],
      ['POST', `/api/vdi/desktops/vm/${namespace}/%2e%2e/release`, undefined, 400, 'path traversal'],
      ['GET', `/api/vdi/desktops/vm/${namespace}%2F${member}`, undefined, 400, 'encoded slash'],
      [
        'GET',
        `/api/vdi/desktops/vm/${namespace}/${member.toUpperCase()}`,
        undefined,
        400,
        'not a valid member name',
      ],
      ['POST', `/api/vdi/pools/vm/${namespace}/Dev_Pool/claim`, undefined, 400, 'not a valid pool name'],
      ['GET', `/api/vdi/desktops/vm//${member}`, undefined, 400, 'empty segment'],
      ['GET', '/api/tasks/..', undefined, 400, 'path traversal'],
      ['POST', `/api/vdi/pools/ct/${namespace}/devpool/claim`, undefined, 404, 'There is no pool "devpool"'],
      ['POST', `/api/vdi/pools/pod/${namespace}/devpool/claim`, undefined, 400, 'not a desktop kind'],
      [
        'POST',
        `/api/vdi/pools/vm/kube-system/devpool/claim`,
        undefined,
        404,
        'has no pools this broker serves',
      ],
      ['POST', claimPath(namespace), 'x'.repeat(64 * 1024), 413, 'over 16384 bytes'],
      ['POST', `${desktopPath(namespace, member)}/release`, '{"identity":', 400, 'not valid JSON'],
      ['POST', `${desktopPath(namespace, member)}/release`, '["release"]', 400, 'must be a JSON object'],
      ['DELETE', desktopPath(namespace, member), undefined, 405, 'DELETE is not allowed'],
      ['GET', `${desktopPath(namespace, member)}/release`, undefined, 405, 'use POST'],
      ['GET', '/api/vdi/desktops?all=yes', undefined, 400, 'all takes 1'],
      ['GET', '/api/vdi/nothing-here', undefined, 404, 'no broker route'],
      ['GET', desktopPath(namespace, 'not-a-member'), undefined, 404, 'no desktop'],
    ];
    for (const [method, path, body, status, message] of cases) {
      const reply = await api.call(method, path, { as: alice, ...(body === undefined ? {} : { body }) });
      expect(reply.status, `${method} ${path}`).toBe(status);
      expect(reply.body.error.message, `${method} ${path}`).toContain(message);
      expect(JSON.stringify(reply.body)).not.toMatch(/\bat .*\.ts:\d+/);
    }
    const wrongMethod = await api.call('PUT', claimPath(namespace), { as: alice });
    expect(wrongMethod.headers.allow).toBe('POST');
    const crossSite = await api.call('POST', `${desktopPath(namespace, member)}/release`, {
      as: alice,
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect([crossSite.status, crossSite.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await clusterState(setup)).toEqual(before);
  });

  it('serves only its namespaces: a pool elsewhere is absent', async () => {
    const { api, namespace } = await setUp(1);
    const elsewhere = await createTestNamespace(cluster(), 'unserved');
    const [member] = await createPoolMembers(cluster(), elsewhere, 'hidden', 1);
    expect(
      (await api.call('GET', '/api/vdi/pools', { as: alice })).body.pools.map(
        (pool: { id: string }) => pool.id,
      ),
    ).toEqual([`vm/${namespace}/devpool`]);
    for (const [method, path] of [
      ['POST', claimPath(elsewhere, 'hidden')],
      ['GET', desktopPath(elsewhere, member ?? '')],
    ] as const) {
      const reply = await api.call(method, path, { as: admin });
      expect([reply.status, reply.body.error.code]).toEqual([404, 'NOT_FOUND']);
    }
    expect(await api.vdi.context.cluster.listLeases(elsewhere)).toEqual([]);
  });

  it('serves its OpenAPI document', async () => {
    const { api } = await setUp(1);
    const reply = await api.call('GET', '/api/vdi/openapi.json', { as: alice });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(buildOpenApiDocument());
  });

  it('answers 404 on every /api/vdi/ route when turned off, and refuses anonymous /api callers when auth is required', async () => {
    const { api, namespace } = await setUp(1, { enabled: false, authRequired: true });
    for (const path of ['/api/vdi/pools', '/api/vdi/openapi.json', desktopPath(namespace, 'devpool-1')]) {
      const reply = await api.call('GET', path, { as: alice });
      expect([reply.status, reply.body.error.code]).toEqual([404, 'NOT_FOUND']);
    }
    expect((await api.call('GET', '/api/vms')).status).toBe(401);
    expect((await api.call('GET', '/api/vms', { as: alice })).status).toBe(404);
    const open = await setUp(1);
    expect((await open.api.call('GET', '/api/vms')).status).toBe(404);
  });

  it('gates consoles: the holder and admins pass and are counted, others are refused', async () => {
    const { api, namespace, members } = await setUp(2);
    const desktop = (await api.call('POST', claimPath(namespace), { as: alice })).body;
    const free = members.find((member) => member !== desktop.member) ?? '';
    const { broker } = api;

    const refusal = await broker
      .authorizeConsole({ desktopId: desktop.id, identity: bob, kind: 'vnc' })
      .catch((error: unknown) => error);
    expect(isVdiError(refusal, 'NOT_HOLDER')).toBe(true);
    const unclaimed = await broker
      .authorizeConsole({ desktopId: `vm/${namespace}/${free}`, identity: alice, kind: 'vnc' })
      .catch((error: unknown) => error);
    expect(isVdiError(unclaimed, 'CLAIM_ENDED')).toBe(true);

    const handle = await broker.authorizeConsole({ desktopId: desktop.id, identity: alice, kind: 'vnc' });
    const byAdmin = await broker.authorizeConsole({
      desktopId: desktop.id,
      identity: admin,
      kind: 'terminal',
    });
    const path = desktopPath(namespace, desktop.member);
    expect((await api.call('GET', path, { as: alice })).body).toMatchObject({
      connected: true,
      disconnectedAt: null,
    });
    await handle.close();
    await byAdmin.close();
    const after = (await api.call('GET', path, { as: alice })).body;
    expect(after).toMatchObject({ connected: false, reclaimReason: 'disconnect-grace' });
    expect(Date.parse(after.reclaimAt) - Date.parse(after.disconnectedAt)).toBe(15 * minute);
  });

  it('does not reclaim a desktop only because the broker restarted mid-session', async () => {
    const { api, namespace, clock } = await setUp(1);
    const desktop = (await api.call('POST', claimPath(namespace), { as: alice })).body;
    await api.broker.authorizeConsole({ desktopId: desktop.id, identity: alice, kind: 'vnc' });
    await brokers.close(api);

    clock.advance(20 * minute);
    const restarted = await brokers.start(cluster(), namespace, clock);
    restarted.broker.start();
    expect((await restarted.broker.sessions.runPass()).reclaimed).toBe(0);
    clock.advance(14 * minute);
    expect((await restarted.broker.sessions.runPass()).reclaimed).toBe(0);
    const view = (await restarted.call('GET', desktopPath(namespace, desktop.member), { as: alice })).body;
    expect(view).toMatchObject({
      owner: alice,
      sessionId: desktop.sessionId,
      connected: false,
      reclaimReason: 'disconnect-grace',
    });
    expect(Date.parse(view.reclaimAt)).toBe(
      restarted.broker.sessions.processStartedAt.getTime() + 15 * minute,
    );

    // the policy itself still works: past the grace from the restart, the desktop goes back
    clock.advance(2 * minute);
    expect((await restarted.broker.sessions.runPass()).reclaimed).toBe(1);
    const log = (await restarted.call('GET', '/api/tasklog', { as: admin })).body.records;
    expect(log.map((record: { action: string }) => record.action)).toContain(
      'vdi reclaim (disconnect-grace)',
    );
  });

  it('works as a fetch handler too', async () => {
    const { api, namespace } = await setUp(1);
    const response = await api.broker.fetch(
      new Request(`http://broker.test${claimPath(namespace)}`, {
        method: 'POST',
        headers: { 'Tailscale-User-Login': alice },
      }),
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as { owner: string }).owner).toBe(alice);
    const big = await api.broker.fetch(
      new Request(`http://broker.test${claimPath(namespace)}`, {
        method: 'POST',
        headers: { 'Tailscale-User-Login': alice },
        body: new ReadableStream({
          start(controller) {
            for (let chunk = 0; chunk < 8; chunk += 1) controller.enqueue(new Uint8Array(4096));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit),
    );
    expect(big.status).toBe(413);
    expect((await api.broker.fetch(new Request('http://broker.test/elsewhere'))).status).toBe(404);
  });

  it('passes paths that are not its own to the next handler, and warns about open mode at start', async () => {
    const { api, namespace } = await setUp(1, { admins: [] });
    const calls: string[] = [];
    const next = () => calls.push('next');
    const { createServer } = await import('node:http');
    const server = createServer((req, res) =>
      api.broker.handleNode(req, res, () => {
        next();
        res.writeHead(204).end();
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    expect((await fetch(`http://127.0.0.1:${port}/index.html`)).status).toBe(204);
    expect((await fetch(`http://127.0.0.1:${port}/api/vdi/pools`)).status).toBe(401);
    expect(calls).toEqual(['next']);
    await new Promise<void>((resolve) => server.close(() => resolve()));

    api.broker.start();
    expect(api.logs.some((line) => line.includes('open mode'))).toBe(true);
    // open mode: every caller is an admin
    const desktop = (await api.call('POST', claimPath(namespace), { as: alice })).body;
    expect((await api.call('GET', desktopPath(namespace, desktop.member), { as: bob })).status).toBe(200);
  });

  it('runs nothing of the broker when turned off: no renewal, no reclaim, no container-pool reconcile, and says so at start', async () => {
    // the same claim and pool under a broker that is on show what its passes do, so the one that is off is seen to do none
    const policy = { intervalMs: 50, maxSessionMs: 10 * minute };
    const on = await setUp(1, policy);
    const off = await setUp(1, { ...policy, enabled: false });
    const leases = new Map<Setup, string | undefined>();
    for (const setup of [on, off]) {
      const { vdi } = setup.api;
      await vdi.claim({ pool: 'devpool', identity: alice });
      await vdi.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1 } });
      leases.set(
        setup,
        (await vdi.context.cluster.getLease(setup.namespace, 'corral-vdi-devpool-1'))?.metadata
          .resourceVersion,
      );
      // past the maximum session, and past a third of the Lease's hour, when a renewal is due
      setup.clock.advance(21 * minute);
      setup.api.broker.start();
    }

    await waitFor(
      async () => ({
        lease: await on.api.vdi.context.cluster.getLease(on.namespace, 'corral-vdi-devpool-1'),
        pod: await on.api.vdi.context.cluster.resource(podKind).in(on.namespace).get('devbox-1'),
      }),
      {
        describe: 'the broker that is on to reclaim devpool-1 and make devbox-1',
        until: ({ lease, pod }) => !lease && !!pod,
      },
    );
    const kube = off.api.vdi.context.cluster;
    expect((await kube.getLease(off.namespace, 'corral-vdi-devpool-1'))?.metadata.resourceVersion).toBe(
      leases.get(off),
    );
    expect(await kube.resource(podKind).in(off.namespace).get('devbox-1')).toBeUndefined();
    expect(off.api.broker.isLeader()).toBe(false);
    expect(on.api.logs.filter((line) => line.startsWith('broker: on'))).toHaveLength(1);
    expect(off.api.logs.filter((line) => line.startsWith('broker: '))).toEqual([
      'broker: off (enabled is false; CORRAL_VDI_BROKER=1 turns it on): every /api/vdi/ route answers 404, and this ' +
        'process renews no claim, reclaims nothing, keeps no spares and reconciles no container pool.',
    ]);
  });

  it('refuses to start without an identity provider', () => {
    const error = (() => {
      try {
        createBroker({ identity: [], kubeConfig: cluster().kubeConfig });
      } catch (caught) {
        return caught;
      }
    })();
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
  });
});
