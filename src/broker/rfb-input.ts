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
 * It keeps at most the first 12 bytes of a message, enough to tell its type and length, and passes over the
 * rest (a ClientCutText's text, SetEncodings' list) as it arrives: its work is linear in the bytes pushed and its
 * memory constant, however the stream is split.
 *
 * @category broker
 */
export interface RfbInputParser {
  /** Feeds the next client bytes; returns how many input messages they completed. */
  push(bytes: Uint8Array): RfbInputScan;
  /** Whether the parser lost the stream's framing and counts every message as input. */
  readonly lost: boolean;
}

type Phase = 'version' | 'security' | 'init' | 'messages' | 'lost';

// the fixed length of each client message type that has one, type byte included
const fixedLengths = new Map<number, number>([
  [0, 20], // SetPixelFormat
  [3, 10], // FramebufferUpdateRequest
  [4, 8], // KeyEvent
  [5, 6], // PointerEvent
  [150, 10], // EnableContinuousUpdates
  [250, 4], // xvp
]);

// how many first bytes of a message of each variable-length type tell its length
const headLengths = new Map<number, number>([
  [2, 4], // SetEncodings: a u16 count of 4-byte encodings
  [6, 8], // ClientCutText: a u32 length of text
  [248, 9], // ClientFence: flags, then a u8 length of payload
  [251, 7], // SetDesktopSize: a u8 count of 16-byte screens
  [255, 2], // QEMU client messages: the subtype
]);

const versionLength = 12;

/** How many first bytes of the message starting with `type` tell its length; `-1` for a type it does not know. */
function headLength(type: number): number {
  if (fixedLengths.has(type)) return 1;
  return headLengths.get(type) ?? -1;
}

/** The whole length of a message from its head (of {@link headLength} bytes); `-1` for one it does not know. */
function messageLength(head: Uint8Array): number {
  const type = head[0] ?? -1;
  const fixed = fixedLengths.get(type);
  if (fixed !== undefined) return fixed;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  switch (type) {
    case 2:
      return 4 + 4 * view.getUint16(2);
    case 6: // a negative length is the extended clipboard, its size the absolute value
      return 8 + Math.abs(view.getInt32(4));
    case 248:
      return 9 + (head[8] ?? 0);
    case 251:
      return 8 + 16 * (head[6] ?? 0);
    default: // 255: only the extended key event (subtype 0) is known
      return head[1] === 0 ? 12 : -1;
  }
}

function isInput(head: Uint8Array): boolean {
  return head[0] === 4 || head[0] === 5 || (head[0] === 255 && head[1] === 0);
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
  // the first bytes of the current step, gathered across pushes
  const head = new Uint8Array(versionLength);
  let held = 0;
  // bytes of the current step still to pass over, and whether it is an input message once they have passed
  let skip = 0;
  let inputWhenSkipped = false;

  // read through a function: the checks below narrow phase where a step may still change it
  const isLost = () => phase === 'lost';

  // How many head bytes the current step needs; -1 when a message's type is unknown.
  function wanted(): number {
    switch (phase) {
      case 'version':
        return versionLength;
      case 'messages':
        return held === 0 ? 1 : headLength(head[0] ?? -1);
      default:
        return 1;
    }
  }

  // Acts on a complete head; answers whether it completed an input message.
  function advance(): boolean {
    const bytes = head.subarray(0, held);
    held = 0;
    switch (phase) {
      case 'version': {
        const text = String.fromCharCode(...bytes);
        // 3.3 lets the server pick the security type, which the client's half does not show
        phase = text === 'RFB 003.008\n' || text === 'RFB 003.007\n' ? 'security' : 'lost';
        return false;
      }
      case 'security':
        // VNC authentication: the client's 16-byte response comes before ClientInit
        if (bytes[0] === 2) skip = 16;
        phase = bytes[0] === 1 || bytes[0] === 2 ? 'init' : 'lost';
        return false;
      case 'init':
        phase = 'messages';
        return false;
      default: {
        const length = messageLength(bytes);
        if (length < 0) {
          phase = 'lost';
          // still held, so the push counts the message it cannot place
          held = bytes.length;
          return false;
        }
        skip = length - bytes.length;
        inputWhenSkipped = skip > 0 && isInput(bytes);
        return skip === 0 && isInput(bytes);
      }
    }
  }

  return {
    push(bytes) {
      const scan = { input: 0 };
      if (phase === 'lost') return { input: bytes.length > 0 ? 1 : 0 };
      let at = 0;
      for (;;) {
        if (skip > 0) {
          if (at === bytes.length) break;
          const passed = Math.min(skip, bytes.length - at);
          skip -= passed;
          at += passed;
          if (skip === 0 && inputWhenSkipped) scan.input += 1;
          continue;
        }
        const want = wanted();
        if (want < 0) {
          phase = 'lost';
          break;
        }
        if (held < want) {
          if (at === bytes.length) break;
          const taken = Math.min(want - held, bytes.length - at);
          head.set(bytes.subarray(at, at + taken), held);
          held += taken;
          at += taken;
          // asked again: a message's type byte tells how much more of its head there is
          continue;
        }
        if (advance()) scan.input += 1;
        if (isLost()) break;
      }
      if (isLost()) {
        // what is left of this push, the unknown message's head included, is a message the parser cannot place
        if (held > 0 || at < bytes.length) scan.input += 1;
        held = 0;
      }
      return scan;
    },
    get lost() {
      return isLost();
    },
  };
}
