import { describe, expect, it } from 'vitest';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';

const brokers = useBrokers();

/** Two VM pools, `devpool` and `gpu`, and a broker limiting each user to `maxDesktopsPerUser` desktops. */
async function setUp(maxDesktopsPerUser: number | undefined) {
  const namespace = await createTestNamespace(cluster(), 'broker-limit');
  await Promise.all([
    createPoolMembers(cluster(), namespace, 'devpool', 2),
    createPoolMembers(cluster(), namespace, 'gpu', 2),
  ]);
  const clock = createTestClock(new Date());
  const start = () =>
    brokers.start(
      cluster(),
      namespace,
      clock,
      maxDesktopsPerUser === undefined ? {} : { maxDesktopsPerUser },
    );
  const api = await start();
  return { namespace, clock, api, start };
}

const claimPath = (namespace: string, pool: string) => `/api/vdi/pools/vm/${namespace}/${pool}/claim`;
const waiting = {
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ wait: true }),
};

describe('the broker-wide maxDesktopsPerUser', () => {
  it('answers a claim past the limit 409 USER_LIMIT_REACHED naming the desktops held, also one that would wait, and a re-claim 200', async () => {
    const { namespace, api } = await setUp(1);
    const first = await api.call('POST', claimPath(namespace, 'devpool'), { as: alice });
    expect(first.status).toBe(200);
    const refused = await api.call('POST', claimPath(namespace, 'gpu'), { as: alice });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toEqual({
      code: 'USER_LIMIT_REACHED',
      message: `${alice} may hold one desktop at a time and holds ${first.body.id}; release one, then claim again.`,
    });
    const wait = await api.call('POST', claimPath(namespace, 'gpu'), { as: alice, ...waiting });
    expect(wait.status).toBe(409);
    expect(wait.body.error.code).toBe('USER_LIMIT_REACHED');
    const again = await api.call('POST', claimPath(namespace, 'devpool'), { as: alice });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, sessionId: first.body.sessionId, retried: true });
    // bob is not alice: his own limit
    expect((await api.call('POST', claimPath(namespace, 'gpu'), { as: bob })).status).toBe(200);
  });

  it('gives one user claiming two pools at once through two replicas one desktop', async () => {
    const { namespace, api, start } = await setUp(1);
    const other = await start();
    const replies = await Promise.all([
      api.call('POST', claimPath(namespace, 'devpool'), { as: alice }),
      other.call('POST', claimPath(namespace, 'gpu'), { as: alice }),
    ]);
    expect(replies.map((reply) => reply.status).sort()).toEqual([200, 409]);
    const held = (await api.vdi.context.cluster.listLeases(namespace)).filter(
      (lease) => lease.spec.holderIdentity === alice,
    );
    expect(held).toHaveLength(1);
  });
});

describe("a pool's own maxDesktopsPerUser through the broker", () => {
  it('refuses a claim of that pool to a user holding that many desktops elsewhere, without a broker limit', async () => {
    const { namespace, api } = await setUp(undefined);
    await setPoolSettings(createVdi({ kubeConfig: cluster().kubeConfig, namespace }).context, {
      name: 'gpu',
      maxDesktopsPerUser: 1,
    });
    expect((await api.call('POST', claimPath(namespace, 'devpool'), { as: alice })).status).toBe(200);
    const refused = await api.call('POST', claimPath(namespace, 'gpu'), { as: alice });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('USER_LIMIT_REACHED');
    // a user who holds nothing yet may claim from gpu
    expect((await api.call('POST', claimPath(namespace, 'gpu'), { as: bob })).status).toBe(200);
  });
});
