import * as asn1 from 'asn1js';
import type { WebSocket } from 'ws';
import {
  decodeRdCleanPathPdu,
  encodeRdCleanPathPdu,
  measureRdCleanPathPdu,
  type RdCleanPathPdu,
  rdCleanPathVersion,
} from '../../src/broker/rdcleanpath.js';

/** RDP security protocols an X.224 Connection Request asks for (MS-RDPBCGR 2.2.1.1.1). */
export const rdpProtocols = { ssl: 1, hybrid: 2, hybridEx: 8 } as const;

/** An X.224 Connection Request as IronRDP sends it: a `mstshash` cookie and an RDP_NEG_REQ. */
export function x224ConnectionRequest(
  requested: number = rdpProtocols.ssl | rdpProtocols.hybrid | rdpProtocols.hybridEx,
  user = 'alice',
): Buffer {
  const negotiation = Buffer.from([0x01, 0, 8, 0, 0, 0, 0, 0]);
  negotiation.writeUInt32LE(requested, 4);
  const x224 = Buffer.concat([
    Buffer.from([0, 0xe0, 0, 0, 0, 0, 0]),
    Buffer.from(`Cookie: mstshash=${user}\r\n`),
    negotiation,
  ]);
  x224[0] = x224.length - 1;
  const tpkt = Buffer.from([3, 0, 0, 0]);
  tpkt.writeUInt16BE(4 + x224.length, 2);
  return Buffer.concat([tpkt, x224]);
}

/** The protocol a guest's X.224 confirm selected (RDP_NEG_RSP), or `undefined` for none. */
export function selectedProtocol(confirm: Uint8Array): number | undefined {
  const bytes = Buffer.from(confirm);
  return bytes.length >= 19 && bytes[11] === 0x02 ? bytes.readUInt32LE(15) : undefined;
}

/** A request PDU: the token, a destination, the X.224 request. */
export function rdCleanPathRequest(proxyAuth: string | undefined, destination: string): Uint8Array {
  return encodeRdCleanPathPdu({
    version: rdCleanPathVersion,
    destination,
    ...(proxyAuth === undefined ? {} : { proxyAuth }),
    x224ConnectionPdu: x224ConnectionRequest(),
  });
}

/** Reads messages into one byte stream: first one whole PDU, then exact counts of the relayed bytes. */
export function createRdCleanPathReader(socket: WebSocket) {
  let buffered = Buffer.alloc(0);
  let closed: { code: number; reason: string } | undefined;
  let wake: (() => void) | undefined;
  socket.on('message', (data: Buffer) => {
    buffered = Buffer.concat([buffered, data]);
    wake?.();
  });
  socket.once('close', (code, reason) => {
    closed = { code, reason: reason.toString() };
    wake?.();
  });
  const until = async (ready: () => boolean) => {
    while (!ready()) {
      if (closed) return false;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
    return true;
  };
  const closedOf = () =>
    new Promise<{ code: number; reason: string }>((resolve) => {
      if (closed) resolve(closed);
      else socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
  return {
    /** The next PDU the broker sent, or `undefined` when the socket closed first. */
    async pdu(): Promise<RdCleanPathPdu | undefined> {
      let total: number | undefined;
      const complete = await until(() => {
        const measured = measureRdCleanPathPdu(buffered.subarray(0, 6));
        total = measured.kind === 'measured' ? measured.totalBytes : undefined;
        return total !== undefined && buffered.length >= total;
      });
      if (!complete || total === undefined) return undefined;
      const pdu = decodeRdCleanPathPdu(buffered.subarray(0, total));
      buffered = buffered.subarray(total);
      return pdu;
    },
    /** Relayed bytes, once at least `length` arrived; all that arrived. */
    async bytes(length: number): Promise<Buffer> {
      await until(() => buffered.length >= length);
      const all = buffered;
      buffered = Buffer.alloc(0);
      return all;
    },
    closed: closedOf,
  };
}

/**
 * A CredSSP TSRequest (MS-CSSP 2.2.1) carrying an NTLM NEGOTIATE_MESSAGE (MS-NLMP 2.2.1.1): what a client sends
 * first over TLS to a guest that chose NLA. The guest answers a TSRequest with an NTLM CHALLENGE_MESSAGE.
 */
export function ntlmNegotiateRequest(): Buffer {
  const negotiate = Buffer.alloc(40);
  negotiate.write('NTLMSSP\0', 0, 'latin1');
  negotiate.writeUInt32LE(1, 8);
  negotiate.writeUInt32LE(0xe2088297, 12);
  Buffer.from([6, 1, 0xb1, 0x1d, 0, 0, 0, 0x0f]).copy(negotiate, 32);
  const explicit = (tagNumber: number, inner: asn1.AsnType) =>
    new asn1.Constructed({ idBlock: { tagClass: 3, tagNumber }, value: [inner] });
  const token = new asn1.Sequence({ value: [explicit(0, new asn1.OctetString({ valueHex: negotiate }))] });
  const request = new asn1.Sequence({
    value: [explicit(0, new asn1.Integer({ value: 6 })), explicit(1, new asn1.Sequence({ value: [token] }))],
  });
  return Buffer.from(request.toBER(false));
}

/** Whether bytes hold an NTLM CHALLENGE_MESSAGE. */
export function holdsNtlmChallenge(bytes: Buffer): boolean {
  const at = bytes.indexOf('NTLMSSP\0', 0, 'latin1');
  return at >= 0 && bytes.readUInt32LE(at + 8) === 2;
}
