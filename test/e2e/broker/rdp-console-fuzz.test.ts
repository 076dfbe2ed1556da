import { afterEach, describe, expect, it } from 'vitest';
import { encodeRdCleanPathPdu } from '../../../src/broker/rdcleanpath.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { useSharedCluster } from '../../support/cluster.js';
import { type FakeGuestBehaviour, startFakeRdpGuest } from '../../support/fake-rdp-guest.js';
import { rdCleanPathRequest, x224ConnectionRequest } from '../../support/rdcleanpath-client.js';
import { alice, bob, useRdpBrokers } from './rdp-support.js';

const cluster = useSharedCluster();
const rdp = useRdpBrokers(cluster);
afterEach(() => rdp.cleanUp());

// a seeded generator, so a failure replays
let seed = 20261206;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const garbage = (length: number) => Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));

describe('the rdp console under abuse: every case ends with an error PDU or a close, and the broker goes on', () => {
  it('random bytes, a 2 GiB length, a wrong version, a second PDU, a PDU in 1-byte messages, a silent guest and a huge confirm', async () => {
    const { api, namespace, member, ip } = await rdp.setUp({ size: 2 });
    // bob holds the other member: he is the other user the broker must keep answering
    expect((await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: bob })).status).toBe(
      200,
    );
    let guest = await startFakeRdpGuest(ip, 'echo');
    const useGuest = async (behaviour: FakeGuestBehaviour) => {
      await guest.close();
      guest = await startFakeRdpGuest(ip, behaviour);
    };
    rdp.track(() => guest.close());
    const heapBefore = process.memoryUsage().heapUsed;

    /** Sends `messages` on a fresh console; the error status or `'answered'`, and the close code. */
    const outcome = async (messages: (token: string) => Uint8Array[]) => {
      const minted = await rdp.mint(api, namespace, member, alice);
      const { socket, reader } = await rdp.openRdp(api, namespace, member, alice);
      for (const message of messages(minted.body.token)) socket.send(message);
      const pdu = await reader.pdu().catch(() => undefined);
      const result = pdu?.error?.httpStatusCode ?? pdu?.error?.wsaLastError ?? (pdu ? 'answered' : 'closed');
      if (pdu && !pdu.error) socket.close();
      const { code } = await reader.closed();
      // another user is answered within a second, whatever this console did
      const started = performance.now();
      expect((await api.call('GET', '/api/vdi/pools', { as: bob })).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1000);
      return { result, code };
    };
    const request = (token: string) => Buffer.from(rdCleanPathRequest(token, `${ip}:3389`));

    for (let round = 0; round < 8; round += 1) {
      const { result } = await outcome(() => [garbage(1 + Math.floor(random() * 2048))]);
      expect([400, 'closed']).toContain(result);
    }
    expect(await outcome(() => [Buffer.from([0x30, 0x84, 0x80, 0, 0, 0])])).toEqual({
      result: 400,
      code: 1000,
    });
    // an empty GeneralizedTime inside a field, which asn1js throws on while it decodes
    expect(await outcome(() => [Buffer.from('3004a0021800', 'hex')])).toEqual({ result: 400, code: 1000 });
    const wrongVersion = (token: string) => [
      encodeRdCleanPathPdu({
        version: 3389,
        proxyAuth: token,
        destination: 'x',
        x224ConnectionPdu: x224ConnectionRequest(),
      }),
    ];
    expect(await outcome(wrongVersion)).toEqual({ result: 400, code: 1000 });
    expect(await outcome((token) => [Buffer.concat([request(token), request(token)])])).toEqual({
      result: 400,
      code: 1000,
    });
    expect(await outcome((token) => [request(token), request(token)])).toMatchObject({ result: 400 });
    // cut into single bytes the request is still one request
    expect(await outcome((token) => [...request(token)].map((byte) => Uint8Array.of(byte)))).toEqual({
      result: 'answered',
      code: 1005,
    });

    await useGuest('silent');
    const silentStarted = performance.now();
    expect(await outcome((token) => [request(token)])).toEqual({ result: 504, code: 1000 });
    expect(performance.now() - silentStarted).toBeLessThan(5000);
    await useGuest('huge-confirm');
    expect(await outcome((token) => [request(token)])).toEqual({ result: 502, code: 1000 });
    await useGuest('negotiation-failure');
    const minted = await rdp.mint(api, namespace, member, alice);
    const refused = await rdp.openRdp(api, namespace, member, alice);
    refused.socket.send(request(minted.body.token));
    const failure = await refused.reader.pdu();
    expect(failure?.error).toEqual({ errorCode: 2 });
    expect(failure?.x224ConnectionPdu?.[11]).toBe(3);
    await guest.close();
    expect(await outcome((token) => [request(token)])).toEqual({ result: 10061, code: 1000 });

    await waitFor(() => api.broker.consoles().length === 0, { describe: 'every fuzzed console to be gone' });
    (globalThis as { gc?: () => void }).gc?.();
    const grownMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
    process.stderr.write(`rdp fuzz: heap grew ${grownMiB.toFixed(1)} MiB over the cases\n`);
    expect(grownMiB).toBeLessThan(64);
    expect(api.logs.filter((line) => line.includes('unexpectedly'))).toEqual([]);
  });

  it('answers 408 to a browser that opens the console and sends nothing', async () => {
    const { api, namespace, member } = await rdp.setUp({ broker: { rdpHandshakeTimeoutMs: 300 } });
    const { reader } = await rdp.openRdp(api, namespace, member, alice);
    expect((await reader.pdu())?.error).toEqual({ errorCode: 1, httpStatusCode: 408 });
    expect((await reader.closed()).code).toBe(1000);
  });
});
