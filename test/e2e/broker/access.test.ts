import { afterEach, describe, expect, it } from 'vitest';
import { authGatewayIdentity } from '../../../src/broker/identity.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { type RunningBroker, startBroker } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const groupsHeader = 'X-Auth-Request-Groups';

const running: RunningBroker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((broker) => broker.close()));
});

// the login comes from the Tailscale header the test client sends, the groups from oauth2-proxy's header
async function setUp(options: Parameters<typeof startBroker>[3] = {}) {
  const namespace = await createTestNamespace(cluster(), 'access');
  const members = await createPoolMembers(cluster(), namespace, 'devpool', 2);
  const api = await startBroker(cluster(), namespace, createTestClock(new Date()), {
    identity: [authGatewayIdentity({ header: 'Tailscale-User-Login' })],
    admins: [],
    adminGroups: ['vdi-admins'],
    ...options,
  });
  running.push(api);
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
