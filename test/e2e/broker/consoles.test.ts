import { request as httpRequest } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { defaultConsoleLimits } from '../../../src/broker/console-proxy.js';
import { consoleCloseCodes } from '../../../src/broker/console-relay.js';
import { connectedAtAnnotation, disconnectedAtAnnotation } from '../../../src/keys.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { connectRfb, createByteReader } from '../../support/rfb-client.js';
import { admin, type RunningBroker, type startBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const minute = 60_000;

const brokers = useBrokers();
const sockets = brokers.sockets;

/** A broker over a pool of `size` members, one of which alice has claimed and runs. */
async function setUp(size = 1, options: Parameters<typeof startBroker>[3] = {}) {
  const namespace = await createTestNamespace(cluster(), 'consoles');
  const members = await createPoolMembers(cluster(), namespace, 'devpool', size);
  const clock = createTestClock(new Date());
  const api = await brokers.start(cluster(), namespace, clock, options);
  const claim = await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: alice });
  expect(claim.status).toBe(200);
  const member: string = claim.body.member;
  await waitForRunningVmi(api.vdi.context.cluster, namespace, member);
  const consolePath = (protocol: string, of = member) =>
    `/api/vdi/desktops/vm/${namespace}/${of}/console/${protocol}`;
  return { namespace, members, member, clock, api, consolePath };
}

interface OpenSocket {
  socket: WebSocket;
  /** Reads what the console sent, from its first byte (the reader listens from before `open`). */
  read: (length: number) => Promise<Buffer>;
}

/** Opens a websocket to the broker as `as`; resolves when it is open. */
function openSocket(api: RunningBroker, path: string, as?: string): Promise<OpenSocket> {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: as === undefined ? {} : { 'Tailscale-User-Login': as },
    perMessageDeflate: false,
  });
  sockets.push(socket);
  const read = createByteReader(socket);
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ socket, read }));
    socket.once('error', reject);
  });
}

const openRfb = async (api: RunningBroker, path: string, as: string) => {
  const { socket, read } = await openSocket(api, path, as);
  return { socket, rfb: await connectRfb(socket, read) };
};

/** The plain HTTP answer to an upgrade the broker refused. */
function refusedUpgrade(
  api: RunningBroker,
  path: string,
  as?: string,
): Promise<{ status: number; code: string; message: string }> {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: as === undefined ? {} : { 'Tailscale-User-Login': as },
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => reject(new Error(`${path} upgraded for ${as}`)));
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

function closeOf(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
}

const sameFrame = (rgb: Uint8Array, expected: Uint8Array) => Buffer.from(rgb).equals(Buffer.from(expected));

describe("the broker's console websockets", () => {
  it("relays a VM's vnc console: the RFB handshake, the name on screen, and a key press that reaches the VM", async () => {
    const { api, namespace, member, consolePath } = await setUp();
    const started = performance.now();
    const { rfb } = await openRfb(api, consolePath('vnc'), alice);
    const frame = await rfb.requestFrame();
    const firstFrameMs = performance.now() - started;
    process.stderr.write(`console: open to first framebuffer ${firstFrameMs.toFixed(0)} ms\n`);
    expect([rfb.width, rfb.height, rfb.name]).toEqual([320, 200, member]);
    expect(sameFrame(frame.rgb, renderScreen({ name: member }).rgb)).toBe(true);

    const change = rfb.requestChange();
    rfb.typeKey(0x7a);
    expect(sameFrame((await change).rgb, renderScreen({ name: member, lastKeysym: 0x7a }).rgb)).toBe(true);
    await waitFor(() => api.vdi.context.cluster.getVmi(namespace, member), {
      describe: 'the key press recorded on the VMI',
      until: (vmi) => vmi?.metadata.annotations?.[simulatorAnnotations.vncKeys] === 'z',
    });
    expect(api.broker.consoles()).toMatchObject([
      { desktopId: `vm/${namespace}/${member}`, protocol: 'vnc', identity: alice },
    ]);
  });

  it('relays the serial console, which echoes', async () => {
    const { api, member, consolePath } = await setUp();
    const { socket, read } = await openSocket(api, consolePath('serial'), admin);
    const banner = `\r\n${member} serial console (echo)\r\n`;
    expect((await read(Buffer.byteLength(banner))).toString()).toBe(banner);
    socket.send(Buffer.from('ls\r'));
    expect((await read(3)).toString()).toBe('ls\r');
  });

  it('refuses before any upgrade: others 403, anonymous 401, a free desktop 404, a terminal of a VM 422, a stopped desktop 409', async () => {
    const { api, namespace, members, member, consolePath } = await setUp(2);
    expect(await refusedUpgrade(api, consolePath('vnc'), bob)).toMatchObject({
      status: 403,
      code: 'NOT_HOLDER',
    });
    expect(await refusedUpgrade(api, consolePath('vnc'))).toMatchObject({
      status: 401,
      code: 'UNAUTHENTICATED',
    });
    const free = members.find((name) => name !== member) ?? '';
    expect(await refusedUpgrade(api, consolePath('vnc', free), alice)).toMatchObject({
      status: 404,
      code: 'CLAIM_ENDED',
    });
    expect(await refusedUpgrade(api, consolePath('terminal'), alice)).toMatchObject({
      status: 422,
      code: 'UNSUPPORTED_BACKEND',
    });
    expect(api.broker.consoles()).toEqual([]);
    // nothing was counted: no connected mark on the claim
    const lease = await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.metadata.annotations?.[connectedAtAnnotation]).toBeUndefined();

    await api.vdi.context.cluster.stopVm(namespace, member);
    await waitFor(() => api.vdi.context.cluster.getVmi(namespace, member), {
      describe: 'the VMI is gone',
      until: (vmi) => vmi === undefined,
    });
    const stopped = await refusedUpgrade(api, consolePath('vnc'), alice);
    expect(stopped).toMatchObject({ status: 409, code: 'DESKTOP_STOPPED' });
    expect(stopped.message).toContain('start the desktop first');
  });

  it('records the disconnect when the browser closes, and a reopen within grace counts as connected again', async () => {
    const { api, namespace, member, clock, consolePath } = await setUp();
    const leaseOf = () => api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    const openedAt = clock.now().toISOString();
    const { socket } = await openRfb(api, consolePath('vnc'), alice);
    expect((await leaseOf())?.metadata.annotations?.[connectedAtAnnotation]).toBe(openedAt);

    clock.advance(2 * minute);
    const closedAt = clock.now().toISOString();
    socket.close(1000, 'tab closed');
    await waitFor(leaseOf, {
      describe: 'the disconnect mark',
      until: (lease) => lease?.metadata.annotations?.[disconnectedAtAnnotation] === closedAt,
    });
    const desktopPath = `/api/vdi/desktops/vm/${namespace}/${member}`;
    expect((await api.call('GET', desktopPath, { as: alice })).body).toMatchObject({
      connected: false,
      disconnectedAt: closedAt,
      reclaimReason: 'disconnect-grace',
    });

    clock.advance(10 * minute);
    await openRfb(api, consolePath('vnc'), alice);
    expect((await api.call('GET', desktopPath, { as: alice })).body).toMatchObject({
      connected: true,
      reclaimAt: null,
    });
    expect((await api.broker.sessions.runPass()).reclaimed).toBe(0);
    expect((await leaseOf())?.metadata.annotations?.[connectedAtAnnotation]).toBe(clock.now().toISOString());
  });

  it('closes an open console with 4001 when the desktop is released', async () => {
    const { api, namespace, member, consolePath } = await setUp();
    const { socket } = await openRfb(api, consolePath('vnc'), alice);
    const closed = closeOf(socket);
    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/release`, {
      as: alice,
    });
    expect(release.status).toBe(202);
    expect(await closed).toEqual({
      code: consoleCloseCodes.released,
      reason: 'The desktop was released; claim a desktop to go on.',
    });
    await waitFor(() => api.broker.consoles().length === 0, {
      describe: 'the console to be gone from the broker',
    });
  });

  it("keeps the holder's console open through an admin's release until the member has stopped, then closes it with 4001", async () => {
    const { api, namespace, member, consolePath } = await setUp();
    const kube = api.vdi.context.cluster;
    await kube.patchVm(namespace, member, {
      metadata: { annotations: { [simulatorAnnotations.stopDelayMs]: '3000' } },
    });
    const { socket } = await openRfb(api, consolePath('vnc'), alice);
    const closed = closeOf(socket);
    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/release`, {
      as: admin,
    });
    expect(release.status).toBe(202);
    await expect
      .poll(
        async () => (await api.call('GET', `/api/tasks/${release.body.task}`, { as: admin })).body.status,
        {
          timeout: 20_000,
        },
      )
      .toBe('done');
    // the stop was accepted and the claim ended, but the guest is still going down: the console stays
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    expect(await kube.getVmi(namespace, member)).toBeDefined();
    expect(socket.readyState).toBe(WebSocket.OPEN);
    expect(await closed).toEqual({
      code: consoleCloseCodes.released,
      reason: 'The desktop was released; claim a desktop to go on.',
    });
    // the member was down by the time its console closed
    const vmi = await kube.getVmi(namespace, member);
    expect(vmi === undefined || vmi.metadata.deletionTimestamp !== undefined).toBe(true);
  });

  it('closes an open console with 4002 and the rule when the policy reclaims the desktop', async () => {
    const { api, namespace, member, clock, consolePath } = await setUp(1, { maxSessionMs: 30 * minute });
    const { socket } = await openSocket(api, consolePath('serial'), alice);
    const closed = closeOf(socket);
    clock.advance(30 * minute + 1);
    expect((await api.broker.sessions.runPass()).reclaimed).toBe(1);
    expect(await closed).toEqual({
      code: consoleCloseCodes.reclaimed,
      reason: 'The desktop was reclaimed (max-duration); claim a desktop again to go on.',
    });
    expect(await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  });

  it('holds the desktop back while the browser does not read, so the broker queues no more than its bound', async () => {
    const { api, member, consolePath } = await setUp();
    const { socket, read } = await openSocket(api, consolePath('vnc'), alice);
    const rfb = await connectRfb(socket, read);
    const frameBytes = 16 + 320 * 200 * 4;
    const requests = 80;
    // the browser stops reading and asks for 80 full frames (20 MB)
    socket.pause();
    const request = Buffer.from([3, 0, 0, 0, 0, 0, 1, 64, 0, 200]);
    for (let index = 0; index < requests; index += 1) socket.send(request);
    let last = -1;
    const held = await waitFor(
      () => {
        const [open] = api.broker.consoles();
        const still = open !== undefined && open.bytesToClient === last;
        last = open?.bytesToClient ?? -1;
        return still && open.bufferedToClient > defaultConsoleLimits.highWaterBytes / 2 ? open : undefined;
      },
      { describe: 'the relay to stop reading the desktop while the browser is over the bound' },
    );
    expect(held.bytesToClient).toBeLessThan(requests * frameBytes);
    expect(held.bufferedToClient).toBeLessThanOrEqual(defaultConsoleLimits.highWaterBytes + frameBytes);

    // once the browser reads again, every frame arrives whole
    socket.resume();
    const header = Buffer.alloc(16);
    for (let index = 0; index < requests; index += 1) {
      (await read(16)).copy(header);
      expect(header.readUInt16BE(8)).toBe(320);
      await read(320 * 200 * 4);
    }
    expect(sameFrame((await rfb.requestFrame()).rgb, renderScreen({ name: member }).rgb)).toBe(true);
    expect(api.broker.consoles()[0]?.bufferedToClient).toBe(0);
  });

  it('survives garbage: bad handshakes, frames that are not websocket, random messages and oversized ones', async () => {
    const { api, member, consolePath } = await setUp();
    const { hostname, port } = new URL(api.url);
    // a seeded generator, so a failure replays
    let seed = 20260702;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const garbage = (length: number) => Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));

    const badKey = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          hostname,
          port,
          path: consolePath('vnc'),
          headers: {
            'Tailscale-User-Login': alice,
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-key': 'not-a-key',
            'sec-websocket-version': '13',
          },
        },
        (res) => resolve(res.statusCode ?? 0),
      );
      req.on('upgrade', () => reject(new Error('upgraded with a bad key')));
      req.on('error', reject);
      req.end();
    });
    expect(badKey).toBe(400);

    // raw bytes after a real upgrade: not websocket frames at all
    for (let round = 0; round < 5; round += 1) {
      const raw = connectTcp(Number(port), hostname);
      const ended = new Promise<void>((resolve) => raw.once('close', () => resolve()));
      raw.on('error', () => undefined);
      raw.write(
        `GET ${consolePath('serial')} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nTailscale-User-Login: ${alice}\r\n` +
          'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      );
      await new Promise<void>((resolve) => raw.once('data', () => resolve()));
      raw.write(garbage(64 + Math.floor(random() * 4096)));
      await ended;
    }

    // random binary messages break the RFB conversation; the console closes, the broker goes on
    for (let round = 0; round < 5; round += 1) {
      const { socket } = await openSocket(api, consolePath('vnc'), alice);
      const closed = closeOf(socket);
      for (let message = 0; message < 20; message += 1) socket.send(garbage(1 + Math.floor(random() * 2048)));
      expect((await closed).code).not.toBe(1006);
    }

    // a message over the bound closes that console with 1009
    const { socket: big } = await openSocket(api, consolePath('serial'), alice);
    const tooBig = closeOf(big);
    big.send(Buffer.alloc(defaultConsoleLimits.maxMessageBytes + 1));
    expect((await tooBig).code).toBe(1009);

    await waitFor(() => api.broker.consoles().length === 0, { describe: 'every fuzzed console to be gone' });
    const { rfb } = await openRfb(api, consolePath('vnc'), alice);
    expect(rfb.name).toBe(member);
    expect(api.logs.filter((line) => line.includes('unexpectedly'))).toEqual([]);
  });
});
