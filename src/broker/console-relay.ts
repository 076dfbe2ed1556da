import type { WebSocket } from 'ws';
import type { ConsoleEnd } from '../sessions/session-engine.js';
import type { FramedMessage } from './terminal-framing.js';

/**
 * The close codes a console websocket of the broker ends with, besides those of the websocket protocol itself
 * (1000 either side closed, 1001 the broker stops, 1009 a message over the size limit, 1011 the desktop's side
 * failed).
 *
 * @category broker
 */
export const consoleCloseCodes = {
  /** The desktop was released (by its holder or an admin). */
  released: 4001,
  /** The session policy reclaimed the desktop; the reason names the rule. */
  reclaimed: 4002,
} as const;

/** The close code of a console a release (4001) or a reclaim (4002) ended. */
export function closeCodeOf(end: ConsoleEnd): number {
  return end.cause === 'released' ? consoleCloseCodes.released : consoleCloseCodes.reclaimed;
}

/** Limits of {@link relayConsole}. */
export interface RelayLimits {
  /** Reading from one side pauses while the other side has more than this many bytes queued. */
  highWaterBytes: number;
}

/** Byte counts of a relay, for hosts that watch their consoles. @category broker */
export interface RelayStats {
  /** Bytes queued towards the browser, not yet written to its socket. */
  bufferedToClient: number;
  /** Bytes queued towards the desktop. */
  bufferedToDesktop: number;
  bytesToClient: number;
  bytesToDesktop: number;
}

/** How a relay changes each side's messages for the other, for a desktop whose stream has its own framing. */
export interface RelayFraming {
  toDesktop(data: Buffer, isBinary: boolean): FramedMessage;
  toClient(data: Buffer, isBinary: boolean): FramedMessage;
}

type Translate = (data: Buffer, isBinary: boolean) => FramedMessage;

// without framing, each message goes on as it came
const asIs: Translate = (data, isBinary) => ({ kind: 'send', data, binary: isBinary });

/** A running relay between a browser's websocket and a desktop's console stream. */
export interface ConsoleRelay {
  /** Closes both sides with `code` and `reason`; the relay then ends. */
  end(code: number, reason: string): void;
  /** Cuts both sides at once, for a peer that does not answer a close. */
  terminate(): void;
  stats(): RelayStats;
  /** Resolves once both sides have closed. */
  readonly done: Promise<void>;
}

// Close codes an endpoint may send (RFC 6455 §7.4); 1005, 1006 and 1015 only ever describe a close.
function sendableCode(code: number): number {
  return code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000;
}

// A close reason is at most 123 bytes of UTF-8.
function fitReason(reason: string): string {
  let fitted = reason;
  while (Buffer.byteLength(fitted) > 123) fitted = fitted.slice(0, -1);
  return fitted;
}

// The most bytes of one read's messages sent on as one message.
const mergedBytes = 64 * 1024;

// Reads one side and sends on to the other. Reading pauses while the other side's queue is over the high-water mark
// (each send's callback runs once its bytes are written), and after each read until the event loop has come round,
// so one console's flood of tiny messages cannot keep the other consoles and requests waiting. With `merge` (a plain
// byte stream, whose message boundaries mean nothing) the binary messages of one read go on as one.
function pipe(
  from: WebSocket,
  to: WebSocket,
  limits: RelayLimits,
  translate: Translate,
  merge: boolean,
  count: (bytes: number) => void,
  close: (code: number, reason: string) => void,
): void {
  let congested = false;
  let yielding = false;
  let held: Buffer[] = [];
  let heldBytes = 0;
  const resumeIfFree = () => {
    if (!congested && !yielding) from.resume();
  };
  const send = (data: Buffer, binary: boolean) => {
    if (to.readyState !== to.OPEN) return;
    count(data.length);
    to.send(data, { binary }, () => {
      if (congested && to.bufferedAmount <= limits.highWaterBytes / 2) {
        congested = false;
        resumeIfFree();
      }
    });
    if (!congested && to.bufferedAmount > limits.highWaterBytes) {
      congested = true;
      from.pause();
    }
  };
  // runs once the read's messages are all delivered, before anything else happens on either side
  const flush = () => {
    if (held.length === 0) return;
    const data = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, heldBytes);
    held = [];
    heldBytes = 0;
    send(data, true);
  };
  from.on('message', (received: Buffer, isBinary: boolean) => {
    if (!yielding) {
      // the rest of this read is still delivered; the next waits for the turn after the other sockets' events
      yielding = true;
      from.pause();
      setImmediate(() => {
        yielding = false;
        resumeIfFree();
      });
    }
    if (to.readyState !== to.OPEN) return;
    const message = translate(received, isBinary);
    if (message.kind === 'drop') return;
    if (message.kind === 'close') {
      flush();
      return close(message.code, message.reason);
    }
    const binary = message.binary ?? true;
    if (!merge || !binary || message.data.length >= mergedBytes) {
      flush();
      return send(message.data, binary);
    }
    if (heldBytes + message.data.length > mergedBytes) flush();
    if (held.length === 0) queueMicrotask(flush);
    held.push(message.data);
    heldBytes += message.data.length;
  });
}

/**
 * Relays the messages of a console both ways (changed by `framing` when the desktop's stream has its own) and ends both sides together: a close from either side
 * closes the other with the same code (1000 for one that cannot be sent on), an error or a dropped connection
 * closes the other with 1011. Each direction pauses reading while the receiving side has more than
 * `highWaterBytes` queued, so a slow browser holds the desktop's stream back instead of growing the broker's
 * memory.
 */
export function relayConsole(
  client: WebSocket,
  desktop: WebSocket,
  limits: RelayLimits,
  framing?: RelayFraming,
  // how a close of the desktop's side reaches the browser instead, when its desktop's end is known (a release)
  desktopEnded?: () => { code: number; reason: string } | undefined,
): ConsoleRelay {
  const stats = { bytesToClient: 0, bytesToDesktop: 0 };
  const closeBoth = (code: number, reason: string) => {
    for (const side of [client, desktop]) {
      if (side.readyState === side.CONNECTING || side.readyState === side.OPEN)
        side.close(code, fitReason(reason));
      // a peer that never answers the close is cut off after ws's own close timeout
    }
  };
  const toClient = (bytes: number) => {
    stats.bytesToClient += bytes;
  };
  const toDesktop = (bytes: number) => {
    stats.bytesToDesktop += bytes;
  };
  const merge = framing === undefined;
  pipe(desktop, client, limits, framing?.toClient ?? asIs, merge, toClient, closeBoth);
  pipe(client, desktop, limits, framing?.toDesktop ?? asIs, merge, toDesktop, closeBoth);

  const closed = (side: WebSocket) =>
    new Promise<void>((resolve) => {
      if (side.readyState === side.CLOSED) resolve();
      else side.once('close', () => resolve());
    });
  const follow = (from: WebSocket, other: WebSocket, gone: string, ended?: typeof desktopEnded) => {
    from.on('error', () => {
      const end = ended?.();
      closeBoth(end?.code ?? 1011, end?.reason ?? gone);
    });
    from.once('close', (code: number, reason: Buffer) => {
      const end = ended?.();
      // 1006: the connection dropped without a close frame (a half-close, a reset)
      if (end) closeBoth(end.code, end.reason);
      else if (code === 1006) closeBoth(1011, gone);
      else if (other.readyState === other.OPEN) other.close(sendableCode(code), fitReason(reason.toString()));
      other.resume();
    });
  };
  follow(client, desktop, 'The browser side of the console dropped.');
  follow(desktop, client, "The desktop's console dropped.", desktopEnded);
  // the desktop's stream arrives paused so nothing it said first is lost before these listeners
  desktop.resume();

  return {
    end: closeBoth,
    terminate() {
      client.terminate();
      desktop.terminate();
    },
    stats: () => ({
      ...stats,
      bufferedToClient: client.bufferedAmount,
      bufferedToDesktop: desktop.bufferedAmount,
    }),
    done: Promise.all([closed(client), closed(desktop)]).then(() => undefined),
  };
}
