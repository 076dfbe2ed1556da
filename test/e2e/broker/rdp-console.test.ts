import { connect as connectTcp } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { consoleCloseCodes } from '../../../src/broker/console-relay.js';
import { connectedAtAnnotation, disconnectedAtAnnotation, rdpTokensAnnotation } from '../../../src/keys.js';
import { claimLoopbackRange } from '../../../src/testing/kubevirt/ip-pool.js';
import { rdpGuestAnnotations } from '../../../src/testing/rdp-guest.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { useSharedCluster } from '../../support/cluster.js';
import { guestGreeting, startFakeRdpGuest } from '../../support/fake-rdp-guest.js';
import {
  holdsNtlmChallenge,
  ntlmNegotiateRequest,
  rdCleanPathRequest,
  rdpProtocols,
  selectedProtocol,
  x224ConnectionRequest,
} from '../../support/rdcleanpath-client.js';
import { admin, startBroker } from './broker-support.js';
import { alice, bob, useRdpBrokers } from './rdp-support.js';

const cluster = useSharedCluster();
const rdp = useRdpBrokers(cluster);
afterEach(() => rdp.cleanUp());
const minute = 60_000;

/** The certificate a direct TLS connection to the guest shows, after its own X.224 exchange. */
async function directCertificate(host: string): Promise<Buffer> {
  const socket = connectTcp({ host, port: 3389 });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(x224ConnectionRequest(rdpProtocols.ssl | rdpProtocols.hybrid));
  await new Promise((resolve) => socket.once('data', resolve));
  const tls = connectTls({ socket, rejectUnauthorized: false });
  await new Promise((resolve) => tls.once('secureConnect', resolve));
  const raw = tls.getPeerCertificate().raw;
  tls.destroy();
  return raw;
}

const waitForRdpServer = (
  api: Awaited<ReturnType<typeof rdp.setUp>>['api'],
  namespace: string,
  member: string,
) =>
  waitFor(() => api.vdi.context.cluster.getVmi(namespace, member), {
    describe: "the guest's RDP server to listen",
    until: (vmi) => vmi?.metadata.annotations?.[rdpGuestAnnotations.display] !== undefined,
    timeoutMs: 30_000,
  });

describe("the broker's rdp console against FreeRDP's real server", () => {
  it('answers the guest confirm, its certificate chain and address in TLS mode, and counts the console', async () => {
    const { api, namespace, member, ip } = await rdp.setUp({ rdpServer: 'tls' });
    await waitForRdpServer(api, namespace, member);
    const started = performance.now();
    const { pdu } = await rdp.connectRdp(api, namespace, member);
    process.stderr.write(
      `rdp: open to the RDCleanPath answer ${(performance.now() - started).toFixed(0)} ms\n`,
    );
    expect(pdu?.error).toBeUndefined();
    expect(selectedProtocol(pdu?.x224ConnectionPdu ?? new Uint8Array())).toBe(rdpProtocols.ssl);
    expect(pdu?.serverAddr).toBe(`${ip}:3389`);
    expect(pdu?.serverCertChain?.length).toBeGreaterThan(0);
    expect(Buffer.from(pdu?.serverCertChain?.[0] ?? []).equals(await directCertificate(ip))).toBe(true);
    expect(api.broker.consoles()).toMatchObject([
      { desktopId: `vm/${namespace}/${member}`, protocol: 'rdp', identity: alice },
    ]);
    const lease = await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.metadata.annotations?.[connectedAtAnnotation]).toBeDefined();
    // the token was used up: nothing of it stays on the claim
    expect(lease?.metadata.annotations?.[rdpTokensAnnotation]).toBeUndefined();
  });

  it('relays NLA end to end in NLA mode: an NTLM negotiate through the TLS relay gets the guest challenge', async () => {
    const { api, namespace, member } = await rdp.setUp({ rdpServer: 'nla alice s3cret-pass' });
    await waitForRdpServer(api, namespace, member);
    const { pdu, socket, reader } = await rdp.connectRdp(api, namespace, member);
    expect(pdu?.error).toBeUndefined();
    expect(selectedProtocol(pdu?.x224ConnectionPdu ?? new Uint8Array())).toBeOneOf([
      rdpProtocols.hybrid,
      rdpProtocols.hybridEx,
    ]);
    socket.send(ntlmNegotiateRequest());
    const answer = await reader.bytes(56);
    expect(holdsNtlmChallenge(answer)).toBe(true);
    expect(api.broker.consoles()[0]).toMatchObject({ protocol: 'rdp' });
    expect(api.broker.consoles()[0]?.bytesToClient).toBeGreaterThanOrEqual(answer.length);
  });

  it('stops the guest RDP server with the VMI', async () => {
    const { api, namespace, member, ip } = await rdp.setUp({ rdpServer: 'tls' });
    await waitForRdpServer(api, namespace, member);
    await api.vdi.context.cluster.stopVm(namespace, member);
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = connectTcp({ host: ip, port: 3389 });
          socket.once('connect', () => {
            socket.destroy();
            resolve(false);
          });
          socket.once('error', () => resolve(true));
        }),
      { describe: 'port 3389 of the stopped guest to refuse', timeoutMs: 30_000 },
    );
  });
});

describe("the rdp console's refusals", () => {
  it('refuses before the upgrade: another user 403, anonymous 401; mints a token only for the holder or an admin', async () => {
    const { api, namespace, member } = await rdp.setUp();
    const path = `/api/vdi/desktops/vm/${namespace}/${member}/console/rdp`;
    const upgrade = {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    };
    expect((await api.call('GET', path, { as: bob, headers: upgrade })).status).toBe(403);
    expect((await api.call('GET', path, { headers: upgrade })).status).toBe(401);
    expect((await rdp.mint(api, namespace, member, bob)).body.error.code).toBe('NOT_HOLDER');
    expect((await rdp.mint(api, namespace, member, admin)).status).toBe(200);
    const crossSite = await api.call('POST', `${path}/token`, {
      as: alice,
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(crossSite.status).toBe(403);
    expect(api.broker.consoles()).toEqual([]);
  });

  it('answers an error PDU for a token replayed, expired, of another desktop, of another caller, absent or from an ended claim; nothing is counted', async () => {
    const { api, namespace, member, members, ip, clock } = await rdp.setUp({ size: 2 });
    const guest = await startFakeRdpGuest(ip, 'echo');
    rdp.track(() => guest.close());
    const other = members.find((name) => name !== member) ?? '';
    const destination = `${ip}:3389`;
    const refusal = async (token: string | undefined) => {
      const { socket, reader } = await rdp.openRdp(api, namespace, member, alice);
      socket.send(rdCleanPathRequest(token, destination));
      const pdu = await reader.pdu();
      return { status: pdu?.error?.httpStatusCode, closed: (await reader.closed()).code };
    };

    const used = await rdp.connectRdp(api, namespace, member);
    expect(used.pdu?.error).toBeUndefined();
    used.socket.close();
    const token = (await rdp.mint(api, namespace, member, alice)).body.token;
    const first = await rdp.openRdp(api, namespace, member, alice);
    first.socket.send(rdCleanPathRequest(token, destination));
    expect((await first.reader.pdu())?.error).toBeUndefined();
    first.socket.close();
    expect(await refusal(token)).toEqual({ status: 401, closed: 1000 });

    const expiring = (await rdp.mint(api, namespace, member, alice)).body.token;
    clock.advance(minute + 1);
    expect(await refusal(expiring)).toEqual({ status: 401, closed: 1000 });

    // the other member is bob's: a token minted there is no token here
    expect((await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: bob })).status).toBe(
      200,
    );
    const bobs = (await rdp.mint(api, namespace, other, bob)).body.token;
    expect(await refusal(bobs)).toEqual({ status: 401, closed: 1000 });
    const admins = (await rdp.mint(api, namespace, member, admin)).body.token;
    expect(await refusal(admins)).toEqual({ status: 403, closed: 1000 });
    expect(await refusal(undefined)).toEqual({ status: 401, closed: 1000 });

    const beforeRelease = (await rdp.mint(api, namespace, member, alice)).body.token;
    await waitFor(() => api.broker.consoles().length === 0, { describe: 'the used consoles to close' });
    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/release`, {
      as: alice,
    });
    await waitFor(
      async () =>
        (await api.call('GET', `/api/tasks/${release.body.task}`, { as: alice })).body.status === 'done',
      {
        describe: 'the release',
      },
    );
    expect(
      (await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: alice })).body.member,
    ).toBe(member);
    const lease = await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    await waitForRunningVmiAgain(api, namespace, member);
    expect(await refusal(beforeRelease)).toEqual({ status: 401, closed: 1000 });
    // the refusals counted nothing on the new claim
    expect(
      (await api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`))?.metadata.annotations?.[
        connectedAtAnnotation
      ],
    ).toBe(lease?.metadata.annotations?.[connectedAtAnnotation]);
    expect(guest.connections).toHaveLength(2);
  });

  it('does not follow a destination other than the guest: the test listens there and sees nothing', async () => {
    const { api, namespace, member, ip } = await rdp.setUp();
    const guest = await startFakeRdpGuest(ip, 'echo');
    // an address no control plane on this machine hands out meanwhile
    const decoyRange = await claimLoopbackRange(undefined);
    rdp.track(() => decoyRange.release());
    const decoyHost = decoyRange.cidr.replace(/0\.0\/16$/, '0.9');
    const decoy = await startFakeRdpGuest(decoyHost, 'echo');
    rdp.track(() => guest.close());
    rdp.track(() => decoy.close());
    const minted = await rdp.mint(api, namespace, member, alice);
    const { socket, reader } = await rdp.openRdp(api, namespace, member, alice);
    socket.send(rdCleanPathRequest(minted.body.token, `${decoyHost}:3389`));
    const pdu = await reader.pdu();
    expect(pdu?.serverAddr).toBe(`${ip}:3389`);
    expect(Buffer.from(pdu?.serverCertChain?.[0] ?? []).equals(guest.certificate)).toBe(true);
    socket.send(Buffer.from('hello through TLS'));
    expect((await reader.bytes(17)).toString()).toBe('hello through TLS');
    expect(decoy.connections).toEqual([]);
    expect(guest.connections).toHaveLength(1);
    expect(api.logs.some((line) => line.includes(`"${decoyHost}:3389"`) && line.includes(`${ip}:3389`))).toBe(
      true,
    );
  });
});

describe('the rdp relay', () => {
  it('passes on, whole and in order, what the guest sends the moment TLS is up, then relays both ways', async () => {
    const { api, namespace, member, ip } = await rdp.setUp();
    const guest = await startFakeRdpGuest(ip, 'greet-then-echo');
    rdp.track(() => guest.close());
    const { socket, reader, pdu } = await rdp.connectRdp(api, namespace, member);
    expect(pdu?.error).toBeUndefined();
    const first = await reader.bytes(guestGreeting.length);
    expect(first.equals(guestGreeting)).toBe(true);
    socket.send(Buffer.from('after the greeting'));
    expect((await reader.bytes(18)).toString()).toBe('after the greeting');
  });
});

async function waitForRunningVmiAgain(
  api: Awaited<ReturnType<typeof rdp.setUp>>['api'],
  namespace: string,
  member: string,
) {
  await waitFor(() => api.vdi.context.cluster.getVmi(namespace, member), {
    describe: 'the VMI to run again',
    until: (vmi) => vmi?.status?.phase === 'Running' && !vmi.metadata.deletionTimestamp,
  });
}

describe('rdp consoles and the session engine', () => {
  it('counts as a noVNC console: close starts the grace, a reopen within it cancels', async () => {
    const { api, namespace, member, ip, clock } = await rdp.setUp();
    const guest = await startFakeRdpGuest(ip, 'echo');
    rdp.track(() => guest.close());
    const leaseOf = () => api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    const { socket, pdu } = await rdp.connectRdp(api, namespace, member);
    expect(pdu?.error).toBeUndefined();
    expect((await leaseOf())?.metadata.annotations?.[connectedAtAnnotation]).toBe(clock.now().toISOString());
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
      reclaimReason: 'disconnect-grace',
    });
    clock.advance(10 * minute);
    await rdp.connectRdp(api, namespace, member);
    expect((await api.call('GET', desktopPath, { as: alice })).body).toMatchObject({
      connected: true,
      reclaimAt: null,
    });
    expect((await api.broker.sessions.runPass()).reclaimed).toBe(0);
  });

  it('closes an open rdp console with 4001 on release and 4002 on reclaim', async () => {
    const { api, namespace, member, ip } = await rdp.setUp();
    const guest = await startFakeRdpGuest(ip, 'echo');
    rdp.track(() => guest.close());
    const released = await rdp.connectRdp(api, namespace, member);
    const release = await api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/release`, {
      as: alice,
    });
    expect(release.status).toBe(202);
    expect(await released.reader.closed()).toEqual({
      code: consoleCloseCodes.released,
      reason: 'The desktop was released; claim a desktop to go on.',
    });

    const reclaiming = await rdp.setUp({ broker: { maxSessionMs: 30 * minute } });
    const reclaimGuest = await startFakeRdpGuest(reclaiming.ip, 'echo');
    rdp.track(() => reclaimGuest.close());
    const opened = await rdp.connectRdp(reclaiming.api, reclaiming.namespace, reclaiming.member);
    reclaiming.clock.advance(30 * minute + 1);
    expect((await reclaiming.api.broker.sessions.runPass()).reclaimed).toBe(1);
    expect(await opened.reader.closed()).toEqual({
      code: consoleCloseCodes.reclaimed,
      reason: 'The desktop was reclaimed (max-duration); claim a desktop again to go on.',
    });
  });

  it('works across two replicas: a token minted on one opens the console on the other once, and the grace starts at the last close on either', async () => {
    const { api, namespace, member, ip, clock } = await rdp.setUp();
    const guest = await startFakeRdpGuest(ip, 'echo');
    rdp.track(() => guest.close());
    const other = await startBroker(cluster(), namespace, clock, { rdpHandshakeTimeoutMs: 2_000 });
    rdp.addBroker(other);
    const leaseOf = () => api.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);

    const minted = await rdp.mint(api, namespace, member, alice);
    const onOther = await rdp.openRdp(other, namespace, member, alice);
    onOther.socket.send(rdCleanPathRequest(minted.body.token, minted.body.destination));
    expect((await onOther.reader.pdu())?.error).toBeUndefined();
    const replay = await rdp.openRdp(api, namespace, member, alice);
    replay.socket.send(rdCleanPathRequest(minted.body.token, minted.body.destination));
    expect((await replay.reader.pdu())?.error).toEqual({ errorCode: 1, httpStatusCode: 401 });

    const onFirst = await rdp.connectRdp(api, namespace, member);
    expect(onFirst.pdu?.error).toBeUndefined();
    clock.advance(minute);
    onFirst.socket.close();
    await waitFor(() => api.broker.consoles().length === 0, {
      describe: 'the first replica console to close',
    });
    expect((await leaseOf())?.metadata.annotations?.[disconnectedAtAnnotation]).toBeUndefined();
    clock.advance(minute);
    const closedAt = clock.now().toISOString();
    onOther.socket.close();
    await waitFor(leaseOf, {
      describe: 'the disconnect mark of the last close, on the other replica',
      until: (lease) => lease?.metadata.annotations?.[disconnectedAtAnnotation] === closedAt,
    });
  });
});
