import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  claimedDesktopSchema,
  desktopSchema,
  poolListSchema,
  taskSchema,
} from '../../../src/broker/schemas.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { type RunningBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const image = 'ghcr.io/acme/devbox:1.4';

const brokers = useBrokers();
const sockets = brokers.sockets;

/** A terminal websocket through the broker, with everything it printed so far as text. */
async function openTerminalSocket(api: RunningBroker, path: string, as: string) {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: { 'Tailscale-User-Login': as },
    perMessageDeflate: false,
  });
  sockets.push(socket);
  let printed = '';
  socket.on('message', (data: Buffer) => {
    printed += data.toString('utf8');
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return { socket, closed, printed: () => printed };
}

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const api = await brokers.start(cluster(), namespace, createTestClock(new Date()));
  return { namespace, api };
}

async function freeOf(api: RunningBroker, id: string): Promise<number | undefined> {
  const pools = poolListSchema.parse((await api.call('GET', '/api/vdi/pools', { as: alice })).body);
  return pools.pools.find((pool) => pool.id === id)?.free;
}

async function podUid(api: RunningBroker, namespace: string, member: string): Promise<string | undefined> {
  return (await api.vdi.context.cluster.resource(podKind).in(namespace).get(member))?.metadata.uid;
}

describe('container desktops through the broker', () => {
  it('reconciles a container pool, lists it with its free count, and claims, starts, connects and releases by kind', async () => {
    const { namespace, api } = await setUp('broker-ct');
    await api.vdi.applyCtPool({ spec: { name: 'devbox', image, size: 2 } });
    const pass = await api.broker.reconcileCtPools();
    expect(pass).toMatchObject({ failed: [], reconciled: [{ id: `ct/${namespace}/devbox` }] });
    expect(pass.reconciled[0]?.created).toEqual(['devbox-1', 'devbox-2']);
    await waitFor(() => freeOf(api, `ct/${namespace}/devbox`), {
      describe: 'the broker to list both members of the container pool as free',
      until: (free) => free === 2,
    });

    const claim = await api.call('POST', `/api/vdi/pools/ct/${namespace}/devbox/claim`, { as: alice });
    expect(claim.status).toBe(200);
    const desktop = claimedDesktopSchema.parse(claim.body);
    expect(desktop).toMatchObject({
      kind: 'ct',
      owner: alice,
      pool: 'devbox',
      poolId: `ct/${namespace}/devbox`,
    });
    expect(desktop.id).toBe(`ct/${namespace}/${desktop.member}`);
    expect(await freeOf(api, `ct/${namespace}/devbox`)).toBe(1);

    const path = `/api/vdi/desktops/ct/${namespace}/${desktop.member}`;
    const read = await api.call('GET', path, { as: alice });
    expect([read.status, desktopSchema.parse(read.body).owner]).toEqual([200, alice]);
    expect((await api.call('GET', path, { as: bob })).status).toBe(403);
    const listed = await api.call('GET', '/api/vdi/desktops', { as: alice });
    expect(listed.body.desktops.map((view: { id: string }) => view.id)).toEqual([desktop.id]);
    expect((await api.call('POST', `${path}/start`, { as: alice })).status).toBe(200);
    await waitFor(() => api.call('GET', `${path}/connect`, { as: alice }), {
      describe: `${desktop.id} to be ready for its terminal`,
      until: (reply) => reply.status === 200,
    }).then((reply) => expect(reply.body.target).toMatchObject({ protocol: 'terminal' }));

    const uidBefore = await podUid(api, namespace, desktop.member);
    const release = await api.call('POST', `${path}/release`, { as: alice });
    expect(release.status).toBe(202);
    const task = await waitFor(
      async () =>
        taskSchema.parse((await api.call('GET', `/api/tasks/${release.body.task}`, { as: alice })).body),
      {
        describe: `the release task of ${desktop.id} to finish`,
        until: (found) => found.status !== 'running',
      },
    );
    expect(task).toMatchObject({ status: 'done', error: null });
    expect(await podUid(api, namespace, desktop.member)).not.toBe(uidBefore);
    expect((await api.call('GET', '/api/vdi/desktops', { as: alice })).body.desktops).toEqual([]);
  });

  it('logs a pool whose pass fails and goes on with the others', async () => {
    const { namespace, api } = await setUp('broker-ct-fail');
    await api.vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
    await api.vdi.applyCtPool({
      spec: { name: 'gpubox', image, size: 1, resources: { limits: { 'nvidia.com/gpu': '1' } } },
    });
    const pass = await api.broker.reconcileCtPools();
    expect(pass.failed).toEqual([`ct/${namespace}/gpubox`]);
    expect(pass.reconciled.map((result) => result.id)).toEqual([`ct/${namespace}/devbox`]);
    expect(api.logs.some((line) => line.includes(`reconciling ct/${namespace}/gpubox failed`))).toBe(true);
  });

  it('opens the terminal of a container desktop as plain bytes: a command runs, a resize reaches the shell, and its exit closes the console with the code', async () => {
    const { namespace, api } = await setUp('broker-ct-term');
    await api.vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
    await api.broker.reconcileCtPools();
    await waitFor(() => api.vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
      describe: `Pod ${namespace}/devbox-1 to be Ready`,
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    const { member } = (await api.call('POST', `/api/vdi/pools/ct/${namespace}/devbox/claim`, { as: alice }))
      .body;
    const path = `/api/vdi/desktops/ct/${namespace}/${member}/console/terminal`;

    const terminal = await openTerminalSocket(api, path, alice);
    terminal.socket.send(Buffer.from('echo "host=$HOSTNAME"\n'));
    await waitFor(async () => terminal.printed(), {
      describe: 'the shell to print its host name',
      until: (text) => text.includes(`host=${member}`),
    });
    terminal.socket.send(JSON.stringify({ cols: 132, rows: 40 }));
    terminal.socket.send(Buffer.from('stty size\n'));
    await waitFor(async () => terminal.printed(), {
      describe: 'the shell to report the size the browser sent',
      until: (text) => text.includes('40 132'),
    });
    expect(api.broker.consoles()).toMatchObject([
      { desktopId: `ct/${namespace}/${member}`, protocol: 'terminal' },
    ]);
    terminal.socket.send(Buffer.from('exit 3\n'));
    expect(await terminal.closed).toEqual({ code: 1000, reason: 'The shell exited with code 3.' });
    await waitFor(async () => api.broker.consoles(), {
      describe: 'the broker to forget the closed terminal',
      until: (open) => open.length === 0,
    });
  });
});
