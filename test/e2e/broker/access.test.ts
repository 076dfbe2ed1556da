import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import { holderGroupsAnnotation } from '../../../src/keys.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { type startBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const groupsHeader = 'X-Auth-Request-Groups';

const brokers = useBrokers();

// the login comes from the Tailscale header the test client sends, the groups from oauth2-proxy's header
async function setUp(options: Parameters<typeof startBroker>[3] = {}) {
  const namespace = await createTestNamespace(cluster(), 'access');
  const members = await createPoolMembers(cluster(), namespace, 'devpool', 2);
  const api = await brokers.start(cluster(), namespace, createTestClock(new Date()), {
    identity: [authGatewayIdentity({ header: 'Tailscale-User-Login' })],
    admins: [],
    adminGroups: ['vdi-admins'],
    ...options,
  });
  return { namespace, members, api };
}

const claimPath = (namespace: string, pool = 'devpool') => `/api/vdi/pools/vm/${namespace}/${pool}/claim`;

describe('groups and admin groups through the broker', () => {
  it('makes a member of an admin group an admin, and nobody else', async () => {
    const { api, namespace } = await setUp();
    expect((await api.call('POST', claimPath(namespace), { as: alice })).status).toBe(200);
    const asMember = await api.call('GET', '/api/vdi/desktops?all=1', {
      as: bob,
      headers: { [groupsHeader]: 'devs,vdi-admins' },
    });
    expect(asMember.status).toBe(200);
    expect(asMember.body.desktops.map((desktop: { owner: string }) => desktop.owner)).toEqual([alice]);
    const asOther = await api.call('GET', '/api/vdi/desktops?all=1', {
      as: bob,
      headers: { [groupsHeader]: 'devs' },
    });
    expect(asOther.status).toBe(403);
    expect(asOther.body.error.code).toBe('FORBIDDEN');
  });

  it.each([
    ['an empty entry', 'devs,,vdi-admins'],
    ['a header sent twice', ['devs', 'vdi-admins']],
    ['an empty header', ''],
  ])(
    'refuses a groups header with %s as a malformed login is refused, 401, and claims nothing',
    async (_, groups) => {
      const { api, namespace } = await setUp();
      const headers: Record<string, string | string[]> = { [groupsHeader]: groups };
      const reply = await api.call('POST', claimPath(namespace), {
        as: alice,
        headers: headers as Record<string, string>,
      });
      expect(reply.status).toBe(401);
      expect(reply.body.error.code).toBe('UNAUTHENTICATED');
      expect(reply.body.error.message).toContain(groupsHeader);
      expect(await api.vdi.context.cluster.listLeases(namespace)).toEqual([]);
    },
  );
});

const carol = 'carol@example.com';

/** The plain HTTP answer to an upgrade the broker refused. */
function refusedUpgrade(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; code: string; message: string }> {
  const socket = new WebSocket(url.replace('http', 'ws'), { headers });
  return new Promise((resolve, reject) => {
    socket.once('open', () => reject(new Error(`${url} upgraded`)));
    socket.once('unexpected-response', (_, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => {
        const { error } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve({ status: response.statusCode ?? 0, code: error.code, message: error.message });
      });
    });
    socket.once('error', () => undefined);
  });
}

describe('pool entitlements through the broker', () => {
  // devpool lets everyone; gpu only the group ml
  async function setUpPools() {
    const setup = await setUp();
    await createPoolMembers(cluster(), setup.namespace, 'gpu', 1);
    await setPoolSettings(setup.api.vdi.context, {
      name: 'gpu',
      namespace: setup.namespace,
      allowedGroups: ['ml'],
    });
    return setup;
  }
  const poolNames = (reply: { body: { pools: Array<{ name: string }> } }) =>
    reply.body.pools.map((pool) => pool.name).sort();

  it('lists only the pools the caller may claim; a member of the group and an admin by group see all', async () => {
    const { api } = await setUpPools();
    expect(poolNames(await api.call('GET', '/api/vdi/pools', { as: carol }))).toEqual(['devpool']);
    const asMember = await api.call('GET', '/api/vdi/pools', {
      as: alice,
      headers: { [groupsHeader]: 'ml' },
    });
    expect(poolNames(asMember)).toEqual(['devpool', 'gpu']);
    const asAdmin = await api.call('GET', '/api/vdi/pools', {
      as: bob,
      headers: { [groupsHeader]: 'vdi-admins' },
    });
    expect(poolNames(asAdmin)).toEqual(['devpool', 'gpu']);
  });

  it('refuses a claim and a wait by someone not entitled with 403 NOT_ENTITLED naming the pool, and writes nothing', async () => {
    const { api, namespace } = await setUpPools();
    const wait = { 'content-type': 'application/json' };
    for (const [headers, body] of [
      [{}, undefined],
      [wait, JSON.stringify({ wait: true })],
    ] as const) {
      const reply = await api.call('POST', claimPath(namespace, 'gpu'), {
        as: carol,
        headers: { ...headers, [groupsHeader]: 'devs' },
        ...(body === undefined ? {} : { body }),
      });
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('NOT_ENTITLED');
      expect(reply.body.error.message).toContain(`vm/${namespace}/gpu`);
    }
    expect(await api.vdi.context.cluster.listLeases(namespace)).toEqual([]);
    const asAdmin = await api.call('POST', claimPath(namespace, 'gpu'), {
      as: bob,
      headers: { [groupsHeader]: 'vdi-admins' },
    });
    expect(asAdmin.status).toBe(200);
  });

  it('refuses a console of a holder the pool no longer lets in, through the route and authorizeConsole, and leaves the claim held', async () => {
    const { api, namespace } = await setUpPools();
    const claimed = await api.call('POST', claimPath(namespace, 'gpu'), {
      as: alice,
      headers: { [groupsHeader]: 'ml' },
    });
    expect(claimed.status).toBe(200);
    const member: string = claimed.body.member;
    await waitForRunningVmi(api.vdi.context.cluster, namespace, member);
    await setPoolSettings(api.vdi.context, { name: 'gpu', namespace, allowedGroups: ['research'] });
    const refused = await refusedUpgrade(
      `${api.url}/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`,
      {
        'Tailscale-User-Login': alice,
        [groupsHeader]: 'ml',
      },
    );
    expect(refused).toMatchObject({ status: 403, code: 'NOT_ENTITLED' });
    expect(refused.message).toContain(`vm/${namespace}/gpu`);
    const gate = { desktopId: `vm/${namespace}/${member}`, identity: alice, kind: 'vnc' as const };
    await expect(api.broker.authorizeConsole({ ...gate, groups: ['ml'] })).rejects.toMatchObject({
      code: 'NOT_ENTITLED',
    });
    const desktop = await api.call('GET', `/api/vdi/desktops/vm/${namespace}/${member}`, { as: alice });
    expect(desktop.body.owner).toBe(alice);
  });
});

async function waitForReadyPod(kube: KubeCluster, namespace: string, name: string): Promise<void> {
  await waitFor(() => kube.resource(podKind).in(namespace).get(name), {
    describe: `Pod ${namespace}/${name} to be Ready`,
    until: (pod) => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
}

describe.each(['vm', 'ct'] as const)('a holder of a %s desktop whose pool no longer lets them in', (kind) => {
  const image = 'ghcr.io/acme/devbox:1.4';
  // gpu lets the group ml in: alice claims through the broker as a member of ml, an admin assigns carol the other
  async function setUpHeld() {
    const setup = await setUp();
    const { api, namespace } = setup;
    if (kind === 'vm') {
      await createPoolMembers(cluster(), namespace, 'gpu', 2);
      await setPoolSettings(api.vdi.context, { name: 'gpu', namespace, allowedGroups: ['ml'] });
    } else {
      await api.vdi.applyCtPool({ spec: { name: 'gpu', image, size: 2, allowedGroups: ['ml'] } });
      await api.vdi.reconcileCtPool({ name: 'gpu' });
      for (const member of ['gpu-1', 'gpu-2'])
        await waitForReadyPod(api.vdi.context.cluster, namespace, member);
    }
    const claimed = await api.call('POST', `/api/vdi/pools/${kind}/${namespace}/gpu/claim`, {
      as: alice,
      headers: { [groupsHeader]: 'ml' },
    });
    expect(claimed.status).toBe(200);
    const assigned = await api.vdi.assign({ pool: 'gpu', identity: carol, actor: bob, namespace, kind });
    const members: string[] = [claimed.body.member, assigned.member];
    if (kind === 'vm') {
      for (const member of members) await waitForRunningVmi(api.vdi.context.cluster, namespace, member);
    }
    const desktopPath = (member: string) => `/api/vdi/desktops/${kind}/${namespace}/${member}`;
    return { ...setup, mine: members[0] ?? '', carols: members[1] ?? '', desktopPath };
  }
  const protocol = kind === 'vm' ? 'vnc' : 'terminal';

  it('refuses connect, start and consoles with 403 NOT_ENTITLED, lets the holder read and release it, and records the groups the holder came with', async () => {
    const { api, namespace, mine, desktopPath } = await setUpHeld();
    // the identity provider no longer puts alice in ml
    const asAlice = { as: alice, headers: { [groupsHeader]: 'devs' } };
    for (const [method, path] of [
      ['GET', `${desktopPath(mine)}/connect`],
      ['POST', `${desktopPath(mine)}/start`],
    ] as const) {
      const reply = await api.call(method, path, asAlice);
      expect([path, reply.status, reply.body.error?.code]).toEqual([path, 403, 'NOT_ENTITLED']);
      expect(reply.body.error.message).toContain(`${kind}/${namespace}/gpu`);
    }
    const refused = await refusedUpgrade(`${api.url}${desktopPath(mine)}/console/${protocol}`, {
      'Tailscale-User-Login': alice,
      [groupsHeader]: 'devs',
    });
    expect(refused).toMatchObject({ status: 403, code: 'NOT_ENTITLED' });
    const lease = await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${mine}`);
    expect(lease?.metadata.annotations?.[holderGroupsAnnotation]).toBe('["devs"]');
    // the pass judges the recorded groups, so it marks the claim for reclaim
    expect(await api.broker.sessions.runPass()).toMatchObject({ notEntitled: 1, errors: [] });
    const read = await api.call('GET', desktopPath(mine), asAlice);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ owner: alice, reclaimReason: 'not-entitled' });
    expect((await api.call('POST', `${desktopPath(mine)}/release`, asAlice)).status).toBe(202);
  });

  it('lets an admin and the holder of an assigned desktop connect and open a console, whatever their groups', async () => {
    const { api, namespace, mine, carols, desktopPath } = await setUpHeld();
    const asCarol = await api.call('GET', `${desktopPath(carols)}/connect`, { as: carol });
    expect(asCarol.status).toBe(200);
    const handle = await api.broker.authorizeConsole({
      desktopId: `${kind}/${namespace}/${carols}`,
      identity: carol,
      kind: protocol,
      groups: [],
    });
    await handle.close();
    const asAdmin = await api.call('GET', `${desktopPath(mine)}/connect`, {
      as: bob,
      headers: { [groupsHeader]: 'vdi-admins' },
    });
    expect(asAdmin.status).toBe(200);
    const asMember = await api.call('GET', `${desktopPath(mine)}/connect`, {
      as: alice,
      headers: { [groupsHeader]: 'ml' },
    });
    expect(asMember.status).toBe(200);
  });
});
