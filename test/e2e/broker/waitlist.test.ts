import { describe, expect, it } from 'vitest';
import { waiterSchema } from '../../../src/broker/schemas.js';
import { createVdiClient } from '../../../src/client/vdi-client.js';
import { shortHash } from '../../../src/hash.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { enqueueWaiter } from '../../../src/waitlist/waiter-leases.js';
import { waitersSelector } from '../../../src/waitlist/waitlist-keys.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const carol = 'carol@example.com';

const brokers = useBrokers();

async function setUp() {
  const namespace = await createTestNamespace(cluster(), 'broker-wait');
  const [member = ''] = await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const clock = createTestClock(new Date());
  const api = await brokers.start(cluster(), namespace, clock);
  return { namespace, member, clock, api };
}

const claimPath = (namespace: string) => `/api/vdi/pools/vm/${namespace}/devpool/claim`;
const waiterPath = (id: string) => `/api/vdi/waiters/${id}`;
const json = (body: unknown) => ({
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe('the broker waitlist routes', () => {
  it('queues callers with 202, reports their positions, hands the released member to the first and cancels', async () => {
    const { namespace, member, clock, api } = await setUp();
    expect((await api.call('POST', claimPath(namespace), { as: alice })).status).toBe(200);
    const queued = await api.call('POST', claimPath(namespace), { as: bob, ...json({ wait: true }) });
    expect(queued.status).toBe(202);
    const waiter = waiterSchema.parse(queued.body);
    expect(waiter).toMatchObject({
      id: `vm/${namespace}/devpool/${shortHash(bob)}`,
      status: 'waiting',
      position: 1,
      waiters: 1,
      desktop: null,
    });
    // enqueue times are taken on the broker's clock, which only the test moves
    clock.advance(1000);
    // the browser client, signed in as carol by the proxy in front of the broker
    const asCarol = createVdiClient({
      baseUrl: api.url,
      fetch: (input, init) =>
        fetch(input, { ...init, headers: { ...init?.headers, 'Tailscale-User-Login': carol } }),
    });
    const second = await asCarol.claimOrWait(`vm/${namespace}/devpool`, { waitTimeoutMs: 60_000 });
    expect(second).toMatchObject({ kind: 'waiting', waiter: { position: 2, waiters: 2 } });
    const again = await api.call('POST', claimPath(namespace), { as: bob, ...json({ wait: true }) });
    expect([again.status, again.body.id]).toEqual([202, waiter.id]);
    expect((await api.call('GET', waiterPath(waiter.id), { as: carol })).status).toBe(404);
    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/release`, {
      as: alice,
    });
    expect(release.status).toBe(202);
    const won = await waitFor(async () => (await api.call('GET', waiterPath(waiter.id), { as: bob })).body, {
      describe: 'bob to be handed the released member',
      until: (body) => body.status === 'claimed',
    });
    expect(waiterSchema.parse(won).desktop).toMatchObject({ member, owner: bob });
    if (second.kind !== 'waiting') throw new Error('carol was not queued');
    // carol moves up at her wait's next look at the pool
    await waitFor(() => asCarol.getWaiter(second.waiter.id), {
      describe: 'carol to be first in the queue',
      until: (body) => body.status === 'waiting' && body.position === 1 && body.waiters === 1,
    });
    expect(await asCarol.cancelWait(second.waiter.id)).toMatchObject({ status: 'cancelled', position: null });
    expect(await api.vdi.context.cluster.listLeases(namespace, waitersSelector('devpool'))).toEqual([]);
  });

  it('takes up a wait another broker left queued, keeping its place', async () => {
    const { namespace, api } = await setUp();
    await api.call('POST', claimPath(namespace), { as: alice });
    // what a broker that crashed mid-wait leaves behind: the caller's waiter Lease, still live
    await enqueueWaiter(api.vdi.context, { kind: 'vm', namespace, pool: 'devpool', identity: bob });
    const id = `vm/${namespace}/devpool/${shortHash(bob)}`;
    const resumed = await api.call('GET', waiterPath(id), { as: bob });
    expect([resumed.status, resumed.body.status, resumed.body.position]).toEqual([200, 'waiting', 1]);
    const cancelled = await api.call('DELETE', waiterPath(id), { as: bob });
    expect([cancelled.status, cancelled.body.status]).toEqual([200, 'cancelled']);
    expect((await api.call('DELETE', waiterPath(id), { as: bob })).status).toBe(200);
    expect(await api.vdi.context.cluster.listLeases(namespace, waitersSelector('devpool'))).toEqual([]);
  });

  it('refuses a bad wait timeout before anything is queued', async () => {
    const { namespace, api } = await setUp();
    await api.call('POST', claimPath(namespace), { as: alice });
    for (const body of [
      { wait: true, waitTimeoutMs: 0 },
      { wait: true, waitTimeoutMs: -1 },
      { waitTimeoutMs: 5 },
    ]) {
      const refused = await api.call('POST', claimPath(namespace), { as: bob, ...json(body) });
      expect([refused.status, refused.body.error.code], JSON.stringify(body)).toEqual([400, 'INVALID_INPUT']);
    }
    const plain = await api.call('POST', claimPath(namespace), { as: bob });
    expect([plain.status, plain.body.error.code]).toEqual([409, 'NO_FREE_MEMBER']);
    expect(await api.vdi.context.cluster.listLeases(namespace, waitersSelector('devpool'))).toEqual([]);
  });
});
