import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { inputAtAnnotation, reclaimWarnedAnnotation } from '../../../src/keys.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { connectRfb, createByteReader } from '../../support/rfb-client.js';
import { type RunningBroker, useBrokers } from './broker-support.js';

const minute = 60_000;
const alice = 'alice@example.com';
const cluster = useSharedCluster();

const brokers = useBrokers();
const sockets = brokers.sockets;

/** A broker with a 30-minute idle timeout and a 5-minute warning, over one member alice has claimed and runs. */
async function setUp() {
  const namespace = await createTestNamespace(cluster(), 'idle-consoles');
  await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const clock = createTestClock(new Date());
  const api = await brokers.start(cluster(), namespace, clock, {
    idleTimeoutMs: 30 * minute,
    idleWarningMs: 5 * minute,
  });
  const claim = await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: alice });
  expect(claim.status).toBe(200);
  const member: string = claim.body.member;
  await waitForRunningVmi(api.vdi.context.cluster, namespace, member);
  const lease = () => api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
  return { namespace, member, clock, api, lease };
}

async function openRfb(api: RunningBroker, path: string) {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: { 'Tailscale-User-Login': alice },
    perMessageDeflate: false,
  });
  sockets.push(socket);
  const read = createByteReader(socket);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, rfb: await connectRfb(socket, read) };
}

describe('idle reclaim through the broker consoles', () => {
  it('warns an idle VNC desktop, a key press through the console keeps it, and it goes once idle again', async () => {
    const { api, namespace, member, clock, lease } = await setUp();
    const { socket, rfb } = await openRfb(api, `/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`);
    // screen updates are no input
    await rfb.requestFrame();
    const connectedAt = clock.now().getTime();

    clock.advance(26 * minute);
    expect(await api.broker.sessions.runPass()).toMatchObject({ warned: 1, reclaimed: 0, errors: [] });
    const idleAt = new Date(connectedAt + 30 * minute).toISOString();
    expect((await lease())?.metadata.annotations?.[reclaimWarnedAnnotation]).toBe(`idle ${idleAt}`);
    const shown = await api.call('GET', `/api/vdi/desktops/vm/${namespace}/${member}`, { as: alice });
    expect(shown.body).toMatchObject({
      reclaimReason: 'idle',
      reclaimAt: idleAt,
      idleWarning: true,
      reclaimWarning: true,
      reclaimInMs: 4 * minute,
    });

    const typedAt = clock.now().toISOString();
    rfb.typeKey(0x61);
    await waitFor(lease, {
      describe: 'the key press marked on the Lease',
      until: (current) => current?.metadata.annotations?.[inputAtAnnotation] === typedAt,
    });
    clock.advance(5 * minute);
    expect(await api.broker.sessions.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
    const kept = await api.call('GET', `/api/vdi/desktops/vm/${namespace}/${member}`, { as: alice });
    expect(kept.body.idleWarning).toBeUndefined();

    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    clock.advance(25 * minute);
    expect(await api.broker.sessions.runPass()).toMatchObject({ reclaimed: 1, errors: [] });
    expect(await closed).toEqual({
      code: 4002,
      reason: 'The desktop was reclaimed (idle); claim a desktop again to go on.',
    });
    expect(await lease()).toBeUndefined();
  });

  it('takes typed serial bytes as input', async () => {
    const { api, namespace, member, clock, lease } = await setUp();
    const socket = new WebSocket(
      `${api.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/serial`,
      { headers: { 'Tailscale-User-Login': alice }, perMessageDeflate: false },
    );
    sockets.push(socket);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    clock.advance(20 * minute);
    const typedAt = clock.now().toISOString();
    socket.send(Buffer.from('uptime\r'));
    await waitFor(lease, {
      describe: 'the serial input marked on the Lease',
      until: (current) => current?.metadata.annotations?.[inputAtAnnotation] === typedAt,
    });
    clock.advance(15 * minute);
    expect(await api.broker.sessions.runPass()).toMatchObject({ reclaimed: 0, errors: [] });
  });
});
