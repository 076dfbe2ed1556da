import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { createCertificateAuthority } from '../../src/testing/certificates.js';

/** How a fake guest answers the X.224 request it reads. */
export type FakeGuestBehaviour =
  /** A Connection Confirm choosing TLS, then a TLS server that echoes every byte. */
  | 'echo'
  /** As `echo`, but it first sends {@link guestGreeting} the moment TLS is up, before it reads anything. */
  | 'greet-then-echo'
  /** As `echo`, but each 4-byte big-endian count it reads over TLS is answered with that many bytes. */
  | 'stream'
  /** Nothing, ever. */
  | 'silent'
  /** A TPKT that says it is 60,000 bytes long, and as many bytes as the socket takes. */
  | 'huge-confirm'
  /** A Connection Confirm carrying RDP_NEG_FAILURE (code 5, HYBRID_REQUIRED_BY_SERVER). */
  | 'negotiation-failure';

/** A TCP listener standing in for a guest's RDP service; it records what reached it. */
export interface FakeRdpGuest {
  /** Connections accepted, and the bytes of the first X.224 request each sent. */
  connections: Buffer[];
  /** The DER of the certificate its TLS server shows. */
  certificate: Buffer;
  close(): Promise<void>;
}

/** What a `greet-then-echo` guest sends first: more than one TLS record, so that it arrives in several reads. */
export const guestGreeting = Buffer.from(Array.from({ length: 40_000 }, (_, index) => index % 251));

/** The Connection Confirm of an RDP_NEG_RSP choosing PROTOCOL_SSL, or an RDP_NEG_FAILURE. */
export function x224Confirm(kind: 'ssl' | 'failure'): Buffer {
  return Buffer.from([
    3,
    0,
    0,
    19,
    14,
    0xd0,
    0,
    0,
    0x12,
    0x34,
    0,
    kind === 'ssl' ? 2 : 3,
    0,
    8,
    0,
    kind === 'ssl' ? 1 : 5,
    0,
    0,
    0,
  ]);
}

// Writes each asked-for count of bytes in 64 KiB chunks, as fast as the reader takes them.
function streamOnRequest(tls: TLSSocket): void {
  const chunk = Buffer.alloc(64 * 1024, 0x5a);
  let asked = Buffer.alloc(0);
  let owed = 0;
  const pump = () => {
    while (owed > 0) {
      const size = Math.min(owed, chunk.length);
      owed -= size;
      if (!tls.write(chunk.subarray(0, size))) return void tls.once('drain', pump);
    }
  };
  tls.on('data', (data: Buffer) => {
    asked = Buffer.concat([asked, data]);
    while (asked.length >= 4) {
      const idle = owed === 0;
      owed += asked.readUInt32BE(0);
      asked = asked.subarray(4);
      if (idle) pump();
    }
  });
}

/** Listens on `host:port` as a guest would. */
export async function startFakeRdpGuest(
  host: string,
  behaviour: FakeGuestBehaviour,
  port = 3389,
): Promise<FakeRdpGuest> {
  const dir = mkdtempSync(join(tmpdir(), 'corral-fake-rdp-'));
  const { certPem, keyPem } = createCertificateAuthority(dir, 'fake-rdp-guest');
  const certificate = Buffer.from(certPem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, ''), 'base64');
  const connections: Buffer[] = [];
  const sockets = new Set<Socket>();
  const serve = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const index = connections.push(Buffer.alloc(0)) - 1;
    const onData = (chunk: Buffer) => {
      const request = Buffer.concat([connections[index] ?? Buffer.alloc(0), chunk]);
      connections[index] = request;
      if (request.length < 4 || request.length < request.readUInt16BE(2)) return;
      socket.off('data', onData);
      if (behaviour === 'silent') return;
      if (behaviour === 'negotiation-failure') return void socket.end(x224Confirm('failure'));
      if (behaviour === 'huge-confirm') {
        const header = Buffer.from([3, 0, 0xea, 0x60]);
        socket.write(Buffer.concat([header, Buffer.alloc(60_000 - 4, 0x41)]));
        return;
      }
      socket.write(x224Confirm('ssl'));
      const tls = new TLSSocket(socket, { isServer: true, cert: certPem, key: keyPem });
      tls.on('error', () => tls.destroy());
      if (behaviour === 'stream') streamOnRequest(tls);
      else tls.on('data', (data: Buffer) => tls.write(data));
      if (behaviour === 'greet-then-echo') tls.once('secure', () => tls.write(guestGreeting));
    };
    socket.on('data', onData);
  };
  const server: Server = createServer(serve);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    connections,
    certificate,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
