import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createUsbredirGuest,
  encodeUsbredirPacket,
  helloVersion,
  simulatedGuestVersion,
  UsbredirProtocolError,
  usbredirHeaderBytes,
  usbredirHello,
} from '../../../src/testing/kubevirt/usbredir-guest.js';

const hello = usbredirHello('usbredir 0.14.0');
const bulk = (id: number, payload: string) =>
  encodeUsbredirPacket({ type: 101, id, payload: Buffer.from(payload) });

describe('the simulated usbredir guest', () => {
  it('greets with a hello that carries its version in the 64-byte field and one clear capabilities word', () => {
    const greeting = createUsbredirGuest().greeting();
    expect([greeting.readUInt32LE(0), greeting.readUInt32LE(4), greeting.readUInt32LE(8)]).toEqual([
      0, 68, 0,
    ]);
    expect(helloVersion(greeting.subarray(usbredirHeaderBytes))).toBe(simulatedGuestVersion);
    expect(greeting.readUInt32LE(usbredirHeaderBytes + 64)).toBe(0);
  });

  it('answers nothing to the client hello and echoes each later packet whole, however the bytes are cut', () => {
    const packets = [hello, bulk(1, 'first'), bulk(2, ''), bulk(3, 'x'.repeat(3000))];
    const stream = Buffer.concat(packets);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }),
        (cuts) => {
          const guest = createUsbredirGuest();
          const bounds = [0, ...cuts.sort((a, b) => a - b), stream.length];
          const received = [];
          const replies = [];
          for (let at = 0; at < bounds.length - 1; at += 1) {
            const answer = guest.receive(stream.subarray(bounds[at], bounds[at + 1]));
            received.push(...answer.packets.map((packet) => packet.id));
            replies.push(...answer.replies);
          }
          expect(received).toEqual([0, 1, 2, 3]);
          expect(Buffer.concat(replies).equals(Buffer.concat(packets.slice(1)))).toBe(true);
        },
      ),
    );
  });

  it('refuses a stream that does not start with hello', () => {
    expect(() => createUsbredirGuest().receive(bulk(1, 'early'))).toThrow(
      new UsbredirProtocolError('usbredir must start with hello, not a packet of type 101'),
    );
  });

  it('refuses a packet that announces more than 1 MiB before waiting for it', () => {
    const header = encodeUsbredirPacket({ type: 101, id: 1, payload: Buffer.alloc(0) });
    header.writeUInt32LE((1 << 20) + 1, 4);
    const guest = createUsbredirGuest();
    guest.receive(hello);
    expect(() => guest.receive(header)).toThrow('usbredir packet of 1048577 bytes is over the 1 MiB taken');
  });
});
