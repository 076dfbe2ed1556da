import { createHash } from 'node:crypto';

/** A usbredir packet header: type, payload length and id, each a little-endian 32-bit word. */
export const usbredirHeaderBytes = 12;

/** The usbredir packet type of `hello`, the first packet each side sends. */
export const usbredirHelloType = 0;

/** The version string the simulated guest announces in its hello. */
export const simulatedGuestVersion = 'corral-vdi simulated usbredir guest';

// The hello's version field is 64 bytes; a capabilities word follows, all clear: no 64-bit ids, so every header
// keeps a 32-bit id.
const helloVersionBytes = 64;
// The largest packet taken: a bulk transfer of a USB 3 device is far below it.
const maxPayloadBytes = 1 << 20;

/** One usbredir packet. */
export interface UsbredirPacket {
  type: number;
  id: number;
  payload: Buffer;
}

/** Encodes a usbredir packet with a 32-bit id. */
export function encodeUsbredirPacket({ type, id, payload }: UsbredirPacket): Buffer {
  const header = Buffer.alloc(usbredirHeaderBytes);
  header.writeUInt32LE(type, 0);
  header.writeUInt32LE(payload.length, 4);
  header.writeUInt32LE(id, 8);
  return Buffer.concat([header, payload]);
}

/** A hello packet with `version` and no capabilities. */
export function usbredirHello(version: string): Buffer {
  const payload = Buffer.alloc(helloVersionBytes + 4);
  payload.write(version.slice(0, helloVersionBytes - 1), 'latin1');
  return encodeUsbredirPacket({ type: usbredirHelloType, id: 0, payload });
}

/** The version string of a hello's payload. */
export function helloVersion(payload: Buffer): string {
  const field = payload.subarray(0, helloVersionBytes);
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString('latin1');
}

/**
 * How the simulator labels a packet it received: `<type>:<id>:<payload length>:<first 8 hex digits of the
 * payload's SHA-256>`, so a test can tell which bytes arrived, and in what order.
 */
export function usbredirPacketLabel({ type, id, payload }: UsbredirPacket): string {
  return `${type}:${id}:${payload.length}:${createHash('sha256').update(payload).digest('hex').slice(0, 8)}`;
}

/** A peer that broke the usbredir protocol. */
export class UsbredirProtocolError extends Error {}

/** What the simulated guest does with the bytes of one usbredir connection. */
export interface UsbredirGuest {
  /** Its hello, sent as the connection opens. */
  greeting(): Buffer;
  /** Takes bytes from the client; returns the packets complete so far and the answers to send. */
  receive(data: Buffer): { packets: UsbredirPacket[]; replies: Buffer[] };
}

/**
 * The guest end of a usbredir connection, where QEMU's redirected USB port would be: it greets with its own
 * hello, expects the client's hello first, and echoes every later packet back unchanged, header and all.
 *
 * @throws {@link UsbredirProtocolError} from `receive` when the first packet is no hello or a packet is over 1 MiB.
 */
export function createUsbredirGuest(): UsbredirGuest {
  let pending = Buffer.alloc(0);
  let greeted = false;
  return {
    greeting: () => usbredirHello(simulatedGuestVersion),
    receive(data) {
      pending = Buffer.concat([pending, data]);
      const packets: UsbredirPacket[] = [];
      const replies: Buffer[] = [];
      while (pending.length >= usbredirHeaderBytes) {
        const type = pending.readUInt32LE(0);
        const length = pending.readUInt32LE(4);
        if (length > maxPayloadBytes)
          throw new UsbredirProtocolError(`usbredir packet of ${length} bytes is over the 1 MiB taken`);
        if (pending.length < usbredirHeaderBytes + length) break;
        const whole = pending.subarray(0, usbredirHeaderBytes + length);
        pending = pending.subarray(whole.length);
        const packet = { type, id: whole.readUInt32LE(8), payload: whole.subarray(usbredirHeaderBytes) };
        if (!greeted && type !== usbredirHelloType)
          throw new UsbredirProtocolError(`usbredir must start with hello, not a packet of type ${type}`);
        packets.push(packet);
        if (greeted) replies.push(Buffer.from(whole));
        greeted = true;
      }
      return { packets, replies };
    },
  };
}
