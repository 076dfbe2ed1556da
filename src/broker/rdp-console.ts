import { connect as connectTcp, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as connectTls, type DetailedPeerCertificate, type TLSSocket } from 'node:tls';
import type { WebSocket } from 'ws';
import type { ConsoleEnd, ConsoleHandle } from '../sessions/session-engine.js';
import { type ConsoleRelay, closeCodeOf, type RelayStats } from './console-relay.js';
import {
  decodeRdCleanPathPdu,
  encodeRdCleanPathPdu,
  measureRdCleanPathPdu,
  RdCleanPathFormatError,
  type RdCleanPathPdu,
  rdCleanPathErrorPdu,
  rdCleanPathVersion,
} from './rdcleanpath.js';
import type { RdpTarget, RdpTokenCheck } from './rdp-access.js';

/** The bounds of an RDP console's start, before any byte is relayed. @category broker */
export interface RdpHandshakeLimits {
  /**
   * How long each step may take: the browser's request PDU, the TCP connect, the guest's X.224 confirm and the TLS
   * handshake with the guest.
   */
  handshakeTimeoutMs: number;
  /** Reading from one side pauses while the other side has more than this many bytes queued. */
  highWaterBytes: number;
}

/** The largest request PDU taken: a token, a destination and an X.224 request fit in a few hundred bytes. */
export const maxRdpRequestBytes = 16 * 1024;
// Devolutions Gateway's bound of the guest's X.224 Connection Confirm, which is 19 bytes.
const maxConfirmBytes = 512;

/** What an RDP console needs of the broker once its websocket is open. */
export interface RdpConsoleOptions {
  /** The browser's connection under the websocket, as the upgrade handed it over. */
  clientSocket: Duplex;
  target: RdpTarget;
  limits: RdpHandshakeLimits;
  /** Uses up the request's proxy token (see `consumeRdpToken`). */
  consumeToken(token: string | undefined): Promise<RdpTokenCheck>;
  /** Counts the console with the session engine; called once the token passed. */
  openHandle(): Promise<ConsoleHandle>;
  /** The browser sent input (a fast-path input PDU). */
  noteInput(): void;
  log(message: string): void;
}

type Failure = { detail: Parameters<typeof rdCleanPathErrorPdu>[0]; reason: string };

class RdpConsoleFailure extends Error {
  constructor(readonly failure: Failure) {
    super(failure.reason);
  }
}

function fail(detail: Failure['detail'], reason: string): never {
  throw new RdpConsoleFailure({ detail, reason });
}

// Node's socket error codes as the Windows socket errors RDCleanPath carries (WSAE*).
const wsaErrors: Record<string, number> = {
  ECONNREFUSED: 10061,
  ETIMEDOUT: 10060,
  EHOSTUNREACH: 10065,
  ENETUNREACH: 10051,
  ENETDOWN: 10050,
  ECONNRESET: 10054,
  ECONNABORTED: 10053,
  EPIPE: 10058,
  EADDRNOTAVAIL: 10049,
  EADDRINUSE: 10048,
};

// OpenSSL's names of the TLS alerts (RFC 8446 §6), as Node's error codes end: ERR_SSL_TLSV1_ALERT_ACCESS_DENIED.
const tlsAlerts: Record<string, number> = {
  UNEXPECTED_MESSAGE: 10,
  BAD_RECORD_MAC: 20,
  DECRYPTION_FAILED: 21,
  RECORD_OVERFLOW: 22,
  DECOMPRESSION_FAILURE: 30,
  HANDSHAKE_FAILURE: 40,
  NO_CERTIFICATE: 41,
  BAD_CERTIFICATE: 42,
  UNSUPPORTED_CERTIFICATE: 43,
  CERTIFICATE_REVOKED: 44,
  CERTIFICATE_EXPIRED: 45,
  CERTIFICATE_UNKNOWN: 46,
  ILLEGAL_PARAMETER: 47,
  UNKNOWN_CA: 48,
  ACCESS_DENIED: 49,
  DECODE_ERROR: 50,
  DECRYPT_ERROR: 51,
  PROTOCOL_VERSION: 70,
  INSUFFICIENT_SECURITY: 71,
  INTERNAL_ERROR: 80,
  INAPPROPRIATE_FALLBACK: 86,
  USER_CANCELLED: 90,
  NO_RENEGOTIATION: 100,
  MISSING_EXTENSION: 109,
  UNSUPPORTED_EXTENSION: 110,
  UNRECOGNIZED_NAME: 112,
  UNKNOWN_PSK_IDENTITY: 115,
  CERTIFICATE_REQUIRED: 116,
  NO_APPLICATION_PROTOCOL: 120,
};

function socketFailure(error: NodeJS.ErrnoException, doing: string): Failure {
  const code = error.code ?? '';
  const alert = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(.+)$/.exec(code)?.[1];
  if (alert !== undefined && tlsAlerts[alert] !== undefined)
    return {
      detail: { tlsAlertCode: tlsAlerts[alert] },
      reason: `${doing}: the guest sent the TLS alert ${alert}`,
    };
  const wsa = wsaErrors[code];
  if (wsa !== undefined) return { detail: { wsaLastError: wsa }, reason: `${doing}: ${code}` };
  return { detail: { httpStatusCode: 502 }, reason: `${doing}: ${error.message}` };
}

/** Runs `step` with a deadline; past it, fails with `onTimeout`. */
async function within<T>(ms: number, step: Promise<T>, onTimeout: Failure, cancel: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      cancel();
      reject(new RdpConsoleFailure(onTimeout));
    }, ms);
  });
  try {
    return await Promise.race([step, late]);
  } finally {
    clearTimeout(timer);
  }
}

function openTcp(host: string, port: number): { socket: Socket; connected: Promise<void> } {
  const socket = connectTcp({ host, port, noDelay: true });
  const connected = new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', (error) =>
      reject(new RdpConsoleFailure(socketFailure(error, 'connecting to the guest'))),
    );
  });
  return { socket, connected };
}

/**
 * Reads exactly one TPKT from the guest: its X.224 Connection Confirm, at most {@link maxConfirmBytes}. Anything
 * else (another protocol, more bytes than the confirm, a confirm too large, the end of the stream) fails.
 */
function readConfirm(socket: Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const finish = (outcome: () => void) => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('error', onError);
      socket.pause();
      outcome();
    };
    const refuse = (reason: string) =>
      finish(() => reject(new RdpConsoleFailure({ detail: { httpStatusCode: 502 }, reason })));
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      if (received[0] !== 3) return refuse('the guest answered something other than a TPKT');
      const length = received.readUInt16BE(2);
      if (length > maxConfirmBytes)
        return refuse(`the guest's X.224 confirm is ${length} bytes, over ${maxConfirmBytes}`);
      if (length < 11) return refuse(`the guest's TPKT of ${length} bytes is too short for an X.224 confirm`);
      if (received.length < length) return;
      if (received.length > length) return refuse('the guest sent more than its X.224 confirm');
      if (((received[5] ?? 0) & 0xf0) !== 0xd0)
        return refuse('the guest answered with no X.224 Connection Confirm');
      finish(() => resolve(received));
    };
    const onEnd = () => refuse('the guest closed the connection before its X.224 confirm');
    const onError = (error: NodeJS.ErrnoException) =>
      finish(() => reject(new RdpConsoleFailure(socketFailure(error, "reading the guest's X.224 confirm"))));
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('error', onError);
  });
}

// RDP_NEG_FAILURE (MS-RDPBCGR 2.2.1.2.2) after the 11 bytes of TPKT and X.224 header
const isNegotiationFailure = (confirm: Buffer) => confirm.length >= 19 && confirm[11] === 0x03;

/** The guest's certificates, DER, leaf first; a self-signed root names itself as issuer and ends the walk. */
function certificateChain(tls: TLSSocket): Uint8Array[] {
  const chain: Uint8Array[] = [];
  const seen = new Set<string>();
  let certificate: DetailedPeerCertificate | undefined = tls.getPeerCertificate(true);
  while (certificate?.raw && !seen.has(certificate.fingerprint256)) {
    seen.add(certificate.fingerprint256);
    chain.push(new Uint8Array(certificate.raw));
    certificate = certificate.issuerCertificate;
  }
  return chain;
}

function handshakeTls(socket: Socket): { tls: TLSSocket; secured: Promise<void> } {
  // the guest's certificate is self-signed and not verified: trust rests on the broker's own lookup of its
  // address; the browser binds NLA to the certificate's key. No session resumption, which CredSSP does not support.
  const tls = connectTls({ socket, rejectUnauthorized: false, session: undefined });
  const secured = new Promise<void>((resolve, reject) => {
    tls.once('secureConnect', () => resolve());
    tls.once('error', (error) =>
      reject(new RdpConsoleFailure(socketFailure(error, 'the TLS handshake with the guest'))),
    );
  });
  socket.resume();
  return { tls, secured };
}

/**
 * Runs the RDP console on an open websocket: reads one RDCleanPath request (in as many messages as the browser
 * cuts it into), checks its proxy token, connects to the guest's own address (never the request's destination),
 * forwards the X.224 request, reads one confirm, performs TLS with the guest, answers the confirm, the guest's
 * certificates and address, then relays the plaintext both ways. Every failure answers an error PDU, then closes.
 */
export function runRdpConsole(client: WebSocket, options: RdpConsoleOptions): ConsoleRelay {
  const { target, limits, log } = options;
  const stats = { bytesToClient: 0, bytesToDesktop: 0 };
  let guest: Socket | TLSSocket | undefined;
  let handle: ConsoleHandle | undefined;
  let ended = false;
  const cleanups: (() => void)[] = [];

  const end = (code: number, reason: string) => {
    ended = true;
    if (client.readyState === client.OPEN || client.readyState === client.CONNECTING)
      client.close(code, reason.slice(0, 120));
    guest?.destroy();
  };
  // settles once the console is counted, or once it is clear it never will be
  let counting: Promise<unknown> = Promise.resolve();
  const done = new Promise<void>((resolve) => {
    client.once('close', () => {
      ended = true;
      guest?.destroy();
      void counting
        .catch(() => undefined)
        .then(async () => {
          for (const cleanup of cleanups) cleanup();
          await handle?.close();
          resolve();
        });
    });
  });
  client.on('error', () => client.terminate());

  const answerFailure = (failure: Failure) => {
    if (ended) return;
    log(`broker: the rdp console of ${target.desktopId} failed: ${failure.reason}`);
    if (client.readyState === client.OPEN) client.send(rdCleanPathErrorPdu(failure.detail));
    end(1000, failure.reason);
  };

  // the request: collected until its DER length is there, bounded, one PDU and no more
  const collected: Buffer[] = [];
  let collectedBytes = 0;
  let requestSeen = false;
  const requestTimer = setTimeout(
    () =>
      answerFailure({
        detail: { httpStatusCode: 408 },
        reason: 'the browser sent no RDCleanPath request in time',
      }),
    limits.handshakeTimeoutMs,
  );
  cleanups.push(() => clearTimeout(requestTimer));

  let requestBytes: number | undefined;
  const onRequestMessage = (data: Buffer) => {
    if (requestSeen)
      return answerFailure({ detail: { httpStatusCode: 400 }, reason: 'the browser sent a second request' });
    collected.push(data);
    collectedBytes += data.length;
    if (requestBytes === undefined) {
      // the DER header is in the first 6 bytes: measured once, whatever the length it claims
      const measured = measureRdCleanPathPdu(Buffer.concat(collected, collectedBytes).subarray(0, 6));
      if (measured.kind === 'malformed')
        return answerFailure({
          detail: { httpStatusCode: 400 },
          reason: `the request is no RDCleanPath PDU: ${measured.reason}`,
        });
      if (measured.kind === 'incomplete') {
        if (collectedBytes >= 6)
          answerFailure({ detail: { httpStatusCode: 400 }, reason: 'the request has no DER header' });
        return;
      }
      if (measured.totalBytes > maxRdpRequestBytes)
        return answerFailure({
          detail: { httpStatusCode: 400 },
          reason: `the request says it is ${measured.totalBytes} bytes, over ${maxRdpRequestBytes}`,
        });
      requestBytes = measured.totalBytes;
    }
    if (collectedBytes < requestBytes) return;
    if (collectedBytes > requestBytes)
      return answerFailure({
        detail: { httpStatusCode: 400 },
        reason: 'the browser sent more than one request',
      });
    requestSeen = true;
    clearTimeout(requestTimer);
    let request: RdCleanPathPdu;
    try {
      request = decodeRdCleanPathPdu(Buffer.concat(collected, collectedBytes));
    } catch (error) {
      if (!(error instanceof RdCleanPathFormatError)) throw error;
      return answerFailure({
        detail: { httpStatusCode: 400 },
        reason: `the request is malformed: ${error.message}`,
      });
    }
    collected.length = 0;
    void connectGuest(request).catch((error: unknown) => {
      if (error instanceof RdpConsoleFailure) answerFailure(error.failure);
      else {
        log(`broker: the rdp console of ${target.desktopId} failed unexpectedly: ${String(error)}`);
        answerFailure({ detail: { httpStatusCode: 500 }, reason: 'the broker failed unexpectedly' });
      }
    });
  };
  const onMessage = (data: Buffer) => onRequestMessage(data);
  client.on('message', onMessage);

  async function connectGuest(request: RdCleanPathPdu): Promise<void> {
    const address = `${target.host}:${target.port}`;
    if (!request.x224ConnectionPdu)
      fail({ httpStatusCode: 400 }, 'the request carries no X.224 connection request');
    if (request.destination !== address) {
      log(
        `broker: the rdp console of ${target.desktopId} asked for the destination ${JSON.stringify(request.destination ?? null)}; it goes to the guest's own address ${address}`,
      );
    }
    const check = await options.consumeToken(request.proxyAuth);
    if (check.kind === 'refused')
      fail({ httpStatusCode: check.status }, `its proxy token is refused: ${check.reason}`);
    if (ended) return;
    const opening = options.openHandle();
    counting = opening;
    handle = await opening;
    const onEnded = () => {
      const reason = handle?.ended.reason as ConsoleEnd;
      end(closeCodeOf(reason), reason.message);
    };
    handle.ended.addEventListener('abort', onEnded, { once: true });
    cleanups.push(() => handle?.ended.removeEventListener('abort', onEnded));
    if (ended) return;

    const { socket, connected } = openTcp(target.host, target.port);
    guest = socket;
    const timeout = (doing: string): Failure => ({
      detail: { wsaLastError: 10060 },
      reason: `${doing} took longer than ${limits.handshakeTimeoutMs} ms`,
    });
    await within(limits.handshakeTimeoutMs, connected, timeout('connecting to the guest'), () =>
      socket.destroy(),
    );
    socket.write(request.x224ConnectionPdu as Uint8Array);
    const confirm = await within(
      limits.handshakeTimeoutMs,
      readConfirm(socket),
      {
        detail: { httpStatusCode: 504 },
        reason: `the guest sent no X.224 confirm within ${limits.handshakeTimeoutMs} ms`,
      },
      () => socket.destroy(),
    );
    if (isNegotiationFailure(confirm))
      fail({ negotiationFailure: confirm }, 'the guest refused the security protocols the browser offered');
    const { tls, secured } = handshakeTls(socket);
    guest = tls;
    await within(limits.handshakeTimeoutMs, secured, timeout('the TLS handshake with the guest'), () =>
      tls.destroy(),
    );
    if (ended) return;
    client.send(
      encodeRdCleanPathPdu({
        version: rdCleanPathVersion,
        x224ConnectionPdu: confirm,
        serverCertChain: certificateChain(tls),
        serverAddr: `${tls.remoteAddress ?? target.host}:${tls.remotePort ?? target.port}`,
      }),
    );
    client.off('message', onMessage);
    relay(tls);
  }

  // Plaintext RDP both ways; each side pauses while the other has more than the high-water mark queued.
  function relay(tls: TLSSocket): void {
    let congested = false;
    let yielding = false;
    const resumeClient = () => {
      if (!congested && !yielding) client.resume();
    };
    client.on('message', (data: Buffer) => {
      // fast-path input (MS-RDPBCGR 2.2.8.1.2): action bits 00; slow-path PDUs start with TPKT's 3
      if (((data[0] ?? 3) & 0x03) === 0) options.noteInput();
      stats.bytesToDesktop += data.length;
      if (!tls.write(data) && !congested) {
        congested = true;
        client.pause();
        tls.once('drain', () => {
          congested = false;
          resumeClient();
        });
      }
      if (!yielding) {
        // the rest of this read is delivered; the next waits for the other sockets' turn
        yielding = true;
        client.pause();
        setImmediate(() => {
          yielding = false;
          resumeClient();
        });
      }
    });
    const onSent = () => {
      if (tls.isPaused() && client.bufferedAmount <= limits.highWaterBytes / 2) tls.resume();
    };
    let corked = false;
    tls.on('data', (chunk: Buffer) => {
      if (client.readyState !== client.OPEN) return;
      if (!corked) {
        // TLS hands over one record (at most 16 KiB) at a time: the messages of one turn leave in one write
        corked = true;
        options.clientSocket.cork();
        setImmediate(() => {
          corked = false;
          options.clientSocket.uncork();
        });
      }
      stats.bytesToClient += chunk.length;
      client.send(chunk, { binary: true }, onSent);
      if (client.bufferedAmount > limits.highWaterBytes) tls.pause();
    });
    tls.once('end', () => end(1000, "The desktop's RDP connection closed."));
    tls.once('error', () => end(1011, "The desktop's RDP connection dropped."));
    tls.once('close', () => {
      // a console whose desktop was released goes down with its member: it closes saying so
      const ending = handle?.ending();
      if (ending) end(closeCodeOf(ending), ending.message);
      else end(1000, "The desktop's RDP connection closed.");
    });
  }

  return {
    end,
    terminate() {
      client.terminate();
      guest?.destroy();
    },
    stats: (): RelayStats => ({
      ...stats,
      bufferedToClient: client.bufferedAmount,
      bufferedToDesktop: guest?.writableLength ?? 0,
    }),
    done,
  };
}
