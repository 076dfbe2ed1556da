/**
 * What a VNC client's bytes carried: `input` counts its KeyEvents and PointerEvents (and, once the stream can no
 * longer be followed, every message).
 *
 * @category broker
 */
export interface RfbInputScan {
  input: number;
}

/**
 * Follows the client-to-server half of an RFB stream (RFB 3.7 or 3.8, security None or VNC authentication, as
 * KubeVirt and noVNC speak it) and counts the messages that are user input: KeyEvent (type 4), PointerEvent
 * (type 5) and QEMU's extended key event (type 255, subtype 0). Messages may arrive split or joined in any way.
 * A stream it cannot follow (RFB 3.3, another security type, an unknown message type) is taken as all input from
 * there on, so a desktop is never reclaimed as idle because its protocol was not understood.
 *
 * @category broker
 */
export interface RfbInputParser {
  /** Feeds the next client bytes; returns how many input messages they completed. */
  push(bytes: Uint8Array): RfbInputScan;
  /** Whether the parser lost the stream's framing and counts every message as input. */
  readonly lost: boolean;
}

type Phase = 'version' | 'security' | 'auth' | 'init' | 'messages' | 'lost';

// the fixed length of each client message type that has one, type byte included
const fixedLengths = new Map<number, number>([
  [0, 20], // SetPixelFormat
  [3, 10], // FramebufferUpdateRequest
  [4, 8], // KeyEvent
  [5, 6], // PointerEvent
  [150, 10], // EnableContinuousUpdates
  [250, 4], // xvp
]);

/**
 * The length of the client message at the start of `buffer`, or `undefined` until enough of it arrived to tell;
 * `-1` for a type it does not know.
 */
function messageLength(buffer: Uint8Array): number | undefined {
  const type = buffer[0];
  if (type === undefined) return undefined;
  const fixed = fixedLengths.get(type);
  if (fixed !== undefined) return fixed;
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  switch (type) {
    case 2: // SetEncodings: a u16 count of 4-byte encodings
      return buffer.length < 4 ? undefined : 4 + 4 * view.getUint16(2);
    case 6: // ClientCutText: a u32 length of text (a negative one is extended clipboard, its size the absolute value)
      return buffer.length < 8 ? undefined : 8 + Math.abs(view.getInt32(4));
    case 248: // ClientFence: flags, then a u8 length of payload
      return buffer.length < 9 ? undefined : 9 + (buffer[8] ?? 0);
    case 251: // SetDesktopSize: a u8 count of 16-byte screens
      return buffer.length < 7 ? undefined : 8 + 16 * (buffer[6] ?? 0);
    case 255: // QEMU client messages: only the extended key event (subtype 0) is known
      if (buffer.length < 2) return undefined;
      return buffer[1] === 0 ? 12 : -1;
    default:
      return -1;
  }
}

function isInput(buffer: Uint8Array): boolean {
  return buffer[0] === 4 || buffer[0] === 5 || (buffer[0] === 255 && buffer[1] === 0);
}

/**
 * Creates a parser for one console's client-to-server bytes, from the first byte of the connection.
 *
 * @example
 * ```ts
 * const parser = createRfbInputParser();
 * socket.on('message', (data: Buffer) => {
 *   if (parser.push(data).input > 0) sessions.noteInput({ namespace, member });
 * });
 * ```
 * @category broker
 */
export function createRfbInputParser(): RfbInputParser {
  let phase: Phase = 'version';
  let pending: Uint8Array = new Uint8Array(0);

  // read through a function: the checks above narrow phase where a step may still change it
  const isLost = () => phase === 'lost';

  function take(length: number): Uint8Array | undefined {
    if (pending.length < length) return undefined;
    const head = pending.subarray(0, length);
    pending = pending.subarray(length);
    return head;
  }

  function step(scan: RfbInputScan): boolean {
    switch (phase) {
      case 'version': {
        const version = take(12);
        if (!version) return false;
        const text = new TextDecoder('latin1').decode(version);
        // 3.3 lets the server pick the security type, which the client's half does not show
        phase = text === 'RFB 003.008\n' || text === 'RFB 003.007\n' ? 'security' : 'lost';
        return true;
      }
      case 'security': {
        const chosen = take(1);
        if (!chosen) return false;
        phase = chosen[0] === 1 ? 'init' : chosen[0] === 2 ? 'auth' : 'lost';
        return true;
      }
      case 'auth':
        if (!take(16)) return false;
        phase = 'init';
        return true;
      case 'init':
        if (!take(1)) return false;
        phase = 'messages';
        return true;
      case 'messages': {
        const length = messageLength(pending);
        if (length === undefined) return false;
        if (length < 0) {
          phase = 'lost';
          return true;
        }
        const message = take(length);
        if (!message) return false;
        if (isInput(message)) scan.input += 1;
        return true;
      }
      case 'lost':
        return false;
    }
  }

  return {
    push(bytes) {
      const scan = { input: 0 };
      if (phase === 'lost') return { input: bytes.length > 0 ? 1 : 0 };
      const joined = new Uint8Array(pending.length + bytes.length);
      joined.set(pending);
      joined.set(bytes, pending.length);
      pending = joined;
      while (step(scan)) {
        if (isLost()) {
          // what is left of this push is a message the parser cannot place: count it
          if (pending.length > 0) scan.input += 1;
          pending = new Uint8Array(0);
          break;
        }
      }
      return scan;
    },
    get lost() {
      return isLost();
    },
  };
}
