import { afterEach, describe, expect, it } from 'vitest';
import { createVdiClient, type VdiClient } from '../../../src/client/index.js';
import { VdiError } from '../../../src/errors.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';
import { type RunningBroker, startBroker } from '../broker/broker-support.js';
import { alice, bob } from './browser-support.js';

const cluster = useSharedCluster();
const running: RunningBroker[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((broker) => broker.close()));
});

/** What the proxy in front of the broker does for a signed-in user: it adds the login header. */
const signedIn =
  (login: string | undefined, counted: { calls: number } = { calls: 0 }): typeof fetch =>
  (input, init) => {
    counted.calls += 1;
    const headers = new Headers(init?.headers);
    if (login !== undefined) headers.set('Tailscale-User-Login', login);
    return fetch(input, { ...init, headers });
  };

async function setUp(size: number) {
  const namespace = await createTestNamespace(cluster(), 'client');
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const api = await startBroker(cluster(), namespace, createTestClock(new Date()));
  running.push(api);
  const clientOf = (login: string | undefined, fetchWith = signedIn(login)): VdiClient =>
    createVdiClient({ baseUrl: api.url, fetch: fetchWith });
  return { namespace, api, clientOf, poolId: `vm/${namespace}/devpool` };
}

describe('the browser client against a real broker', () => {
  it('lists pools, claims, reads, starts, plans a console for and releases a desktop, and reads its task', async () => {
    const { namespace, clientOf, poolId } = await setUp(2);
    const vdi = clientOf(alice);
    expect(await vdi.listPools()).toEqual([
      {
        id: poolId,
        kind: 'vm',
        namespace,
        name: 'devpool',
        members: 2,
        claimed: 0,
        free: 2,
        schedule: null,
        rollOut: null,
      },
    ]);
    const desktop = await vdi.claim(poolId);
    expect(desktop).toMatchObject({ owner: alice, poolId, retried: false });
    expect((await vdi.listDesktops()).map((listed) => listed.id)).toEqual([desktop.id]);
    expect(await vdi.getDesktop(desktop.id)).toMatchObject({ id: desktop.id, sessionId: desktop.sessionId });
    await waitFor(() => vdi.getDesktop(desktop.id), {
      describe: "alice's desktop to run",
      until: (read) => read.running,
    });
    expect((await vdi.start(desktop.id)).running).toBe(true);
    const plan = await vdi.connect(desktop.id);
    expect(plan).toMatchObject({ desktopId: desktop.id, holder: alice, target: { protocol: 'vnc' } });

    const accepted = await vdi.release(desktop.id);
    expect(accepted.desktop).toBe(desktop.id);
    const task = await waitFor(() => vdi.getTask(accepted.task), {
      describe: 'the release task to end',
      until: (read) => read.status !== 'running',
    });
    expect(task).toMatchObject({ status: 'done', action: 'vdi release', user: alice, error: null });
    expect(await vdi.listDesktops()).toEqual([]);
    expect((await vdi.listTaskLog()).map((record) => record.action)).toEqual([
      'vdi claim',
      'vdi start',
      'vdi release',
    ]);
  });

  it('claims once when the answer to a claim is lost and the claim is sent again', async () => {
    const { api, namespace, clientOf, poolId } = await setUp(2);
    let lost = 0;
    const losingFirstAnswer: typeof fetch = async (input, init) => {
      const answer = await signedIn(alice)(input, init);
      if (init?.method === 'POST' && lost === 0) {
        lost += 1;
        // the broker claimed, but the answer never reached the page
        throw new TypeError('network error');
      }
      return answer;
    };
    const desktop = await clientOf(alice, losingFirstAnswer).claim(poolId);
    expect(lost).toBe(1);
    expect(desktop).toMatchObject({ owner: alice, retried: true });
    const leases = await api.vdi.context.cluster.listLeases(namespace);
    expect(leases.filter((lease) => lease.metadata.name?.startsWith('corral-vdi-devpool'))).toHaveLength(1);
  });

  it("answers refusals as VdiErrors with the broker's codes, and bad input before any request", async () => {
    const { namespace, clientOf, poolId } = await setUp(1);
    const desktop = await clientOf(alice).claim(poolId);

    const none = await failureOf(clientOf(bob).claim(poolId));
    expect(none).toBeInstanceOf(VdiError);
    expect(none).toMatchObject({ code: 'NO_FREE_MEMBER', details: { status: 409 } });
    expect(none.message).not.toBe('');
    expect(await failureOf(clientOf(bob).getDesktop(desktop.id))).toMatchObject({
      code: 'NOT_HOLDER',
      details: { status: 403 },
    });
    expect(await failureOf(clientOf(undefined).listPools())).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await failureOf(clientOf(alice).getTask('vdi-release-nothing-1'))).toMatchObject({
      code: 'NOT_FOUND',
    });

    const counted = { calls: 0 };
    const counting = clientOf(alice, signedIn(alice, counted));
    expect(await failureOf(counting.claim(`vm/${namespace}/Not_A_Pool`))).toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(await failureOf(counting.release('devpool-1'))).toMatchObject({ code: 'INVALID_INPUT' });
    expect(counted.calls).toBe(0);
  });

  it('says the broker cannot be reached, retryable, when nothing listens', async () => {
    const { api } = await setUp(1);
    const url = api.url;
    await api.close();
    running.splice(0);
    const error = await failureOf(createVdiClient({ baseUrl: url, fetch: signedIn(alice) }).listPools());
    expect(error).toMatchObject({ code: 'CLUSTER_UNAVAILABLE', retryable: true });
  });

  it('builds console URLs on the websocket scheme of the broker, and refuses an unknown console', () => {
    const plain = createVdiClient({ baseUrl: 'http://127.0.0.1:8080' });
    expect(plain.consoleUrl('vm/corral-vms/devpool-1', 'vnc')).toBe(
      'ws://127.0.0.1:8080/api/vdi/desktops/vm/corral-vms/devpool-1/console/vnc',
    );
    const secure = createVdiClient({ baseUrl: 'https://corral.example.ts.net/' });
    expect(secure.consoleUrl({ id: 'vm/corral-vms/devpool-1' }, 'serial')).toBe(
      'wss://corral.example.ts.net/api/vdi/desktops/vm/corral-vms/devpool-1/console/serial',
    );
    expect(secure.consoleUrl('vm/corral-vms/devpool-1', 'rdp')).toBe(
      'wss://corral.example.ts.net/api/vdi/desktops/vm/corral-vms/devpool-1/console/rdp',
    );
    expect(() => secure.consoleUrl('vm/corral-vms/devpool-1', 'spice' as 'vnc')).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => createVdiClient({ baseUrl: 'not a url' })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => createVdiClient()).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });
});
