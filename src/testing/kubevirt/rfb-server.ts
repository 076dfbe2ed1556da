import type { Screen } from './rfb-screen.js';

/** An RFB pixel format (RFC 6143 §7.4): only true colour is served. */
export interface PixelFormat {
  bitsPerPixel: 8 | 16 | 32;
  depth: number;
  bigEndian: boolean;
  trueColour: boolean;
  redMax: number;
  greenMax: number;
  blueMax: number;
  redShift: number;
  greenShift: number;
  blueShift: number;
}

/** The format the server announces: 32 bits, 24 deep, little-endian, red in bits 16–23. */
export const serverPixelFormat: PixelFormat = {
  bitsPerPixel: 32,
  depth: 24,
  bigEndian: false,
  trueColour: true,
  redMax: 255,
  greenMax: 255,
  blueMax: 255,
  redShift: 16,
  greenShift: 8,
  blueShift: 0,
};

/** A client broke the protocol; the server says why and closes. */
export class RfbProtocolError extends Error {}

/** The input a client sent, in the order it arrived. */
export type RfbInput =
  | { kind: 'key'; down: boolean; keysym: number }
  | { kind: 'pointer'; x: number; y: number; buttons: number }
  | { kind: 'cut-text'; text: string };

/** Options of {@link createRfbSession}. */
export interface RfbSessionOptions {
  /** The desktop name of ServerInit. */
  name: string;
  /** The current frame; called for every update sent. */
  screen(): Screen;
  /** Called for each key and pointer event. */
  onInput(input: RfbInput): void;
}

/** One client's RFB 3.8 conversation, without I/O: bytes in, bytes to send out. */
export interface RfbSession {
  /** The ProtocolVersion the server opens with. */
  greeting(): Buffer;
  /** Takes bytes from the client; returns what to send back. @throws {@link RfbProtocolError} */
  receive(chunk: Buffer): Buffer[];
  /** The screen changed: answers an incremental update request that was waiting for a change. */
  changed(): Buffer[];
  /** Whether the handshake is over, so that the server may send messages of its own. */
  isNormal(): boolean;
}

/** Writes a pixel format's 16 bytes. */
export function encodePixelFormat(format: PixelFormat): Buffer {
  const out = Buffer.alloc(16);
  out.writeUInt8(format.bitsPerPixel, 0);
  out.writeUInt8(format.depth, 1);
  out.writeUInt8(format.bigEndian ? 1 : 0, 2);
  out.writeUInt8(format.trueColour ? 1 : 0, 3);
  out.writeUInt16BE(format.redMax, 4);
  out.writeUInt16BE(format.greenMax, 6);
  out.writeUInt16BE(format.blueMax, 8);
  out.writeUInt8(format.redShift, 10);
  out.writeUInt8(format.greenShift, 11);
  out.writeUInt8(format.blueShift, 12);
  return out;
}

/** Reads a pixel format's 16 bytes at `offset`. @throws {@link RfbProtocolError} for a format not served. */
export function decodePixelFormat(bytes: Buffer, offset = 0): PixelFormat {
  const bitsPerPixel = bytes.readUInt8(offset);
  if (bitsPerPixel !== 8 && bitsPerPixel !== 16 && bitsPerPixel !== 32)
    throw new RfbProtocolError(`bits-per-pixel ${bitsPerPixel} is not 8, 16 or 32`);
  const format: PixelFormat = {
    bitsPerPixel,
    depth: bytes.readUInt8(offset + 1),
    bigEndian: bytes.readUInt8(offset + 2) !== 0,
    trueColour: bytes.readUInt8(offset + 3) !== 0,
    redMax: bytes.readUInt16BE(offset + 4),
    greenMax: bytes.readUInt16BE(offset + 6),
    blueMax: bytes.readUInt16BE(offset + 8),
    redShift: bytes.readUInt8(offset + 10),
    greenShift: bytes.readUInt8(offset + 11),
    blueShift: bytes.readUInt8(offset + 12),
  };
  if (!format.trueColour) throw new RfbProtocolError('colour-map pixel formats are not served');
  return format;
}

/** Encodes the rectangle of `screen` as raw pixels in `format`. */
export function encodeRawPixels(
  screen: Screen,
  rect: { x: number; y: number; width: number; height: number },
  format: PixelFormat,
): Buffer {
  const bytesPerPixel = format.bitsPerPixel / 8;
  const out = Buffer.alloc(rect.width * rect.height * bytesPerPixel);
  const scale = (value: number, max: number) => Math.round((value * max) / 255);
  let at = 0;
  for (let y = rect.y; y < rect.y + rect.height; y += 1)
    for (let x = rect.x; x < rect.x + rect.width; x += 1) {
      const from = (y * screen.width + x) * 3;
      const pixel =
        ((scale(screen.rgb[from] ?? 0, format.redMax) << format.redShift) |
          (scale(screen.rgb[from + 1] ?? 0, format.greenMax) << format.greenShift) |
          (scale(screen.rgb[from + 2] ?? 0, format.blueMax) << format.blueShift)) >>>
        0;
      if (bytesPerPixel === 1) out.writeUInt8(pixel & 0xff, at);
      else if (bytesPerPixel === 2)
        format.bigEndian ? out.writeUInt16BE(pixel & 0xffff, at) : out.writeUInt16LE(pixel & 0xffff, at);
      else format.bigEndian ? out.writeUInt32BE(pixel, at) : out.writeUInt32LE(pixel, at);
      at += bytesPerPixel;
    }
  return out;
}

/** ServerInit: the framebuffer's size, the server's pixel format and the desktop name. */
export function encodeServerInit(width: number, height: number, name: string): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt16BE(width, 0);
  head.writeUInt16BE(height, 2);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(nameBytes.length, 0);
  return Buffer.concat([head, encodePixelFormat(serverPixelFormat), length, nameBytes]);
}

/** A FramebufferUpdate of one raw rectangle. */
export function encodeFramebufferUpdate(
  screen: Screen,
  rect: { x: number; y: number; width: number; height: number },
  format: PixelFormat,
): Buffer {
  const head = Buffer.alloc(16);
  head.writeUInt8(0, 0);
  head.writeUInt16BE(1, 2);
  head.writeUInt16BE(rect.x, 4);
  head.writeUInt16BE(rect.y, 6);
  head.writeUInt16BE(rect.width, 8);
  head.writeUInt16BE(rect.height, 10);
  head.writeInt32BE(0, 12);
  return Buffer.concat([head, encodeRawPixels(screen, rect, format)]);
}

/** ServerCutText: text the guest copied, in ISO 8859-1 as RFB has it (other characters become `?`). */
export function encodeServerCutText(text: string): Buffer {
  const bytes = Buffer.from(
    [...text].map((character) => {
      const code = character.codePointAt(0) ?? 0x3f;
      return code > 0xff ? 0x3f : code;
    }),
  );
  const head = Buffer.alloc(8);
  head.writeUInt8(3, 0);
  head.writeUInt32BE(bytes.length, 4);
  return Buffer.concat([head, bytes]);
}

// The largest ClientCutText taken; a longer one is a protocol error rather than a buffer that grows.
const maxCutTextBytes = 1 << 20;
/** How much of a ClientCutText the guest keeps: its first characters; the rest is passed over as it arrives. */
export const keptCutTextChars = 4096;

/**
 * Starts one client's RFB 3.8 conversation (RFC 6143): version, security type 1 (None), ServerInit, then
 * SetPixelFormat, SetEncodings (ignored: every update is raw), FramebufferUpdateRequest, KeyEvent,
 * PointerEvent and ClientCutText (its first {@link keptCutTextChars} characters handed on as text). A
 * non-incremental request is answered at once; an incremental one when the screen changes. It keeps at most one
 * message's first 20 bytes and the start of a cut text, and passes over the rest and the ignored lists as they
 * arrive, so its work follows the bytes received however they are split.
 */
export function createRfbSession(options: RfbSessionOptions): RfbSession {
  let stage: 'version' | 'security' | 'init' | 'normal' = 'version';
  // the first bytes of the current step, gathered across chunks: the whole of every message that is read
  const head = Buffer.alloc(20);
  let held = 0;
  // bytes of an ignored message still to pass over
  let skip = 0;
  // a ClientCutText being received: the text kept so far and how many bytes are still to come
  let cutText: { text: string; left: number } | undefined;
  let format = serverPixelFormat;
  let waiting: { x: number; y: number; width: number; height: number } | undefined;

  const clip = (x: number, y: number, width: number, height: number, screen: Screen) => {
    const left = Math.min(x, screen.width);
    const top = Math.min(y, screen.height);
    const right = Math.min(x + width, screen.width);
    const bottom = Math.min(y + height, screen.height);
    // an empty or off-screen request gets the whole screen, as a client asking for "something" would want
    return right > left && bottom > top
      ? { x: left, y: top, width: right - left, height: bottom - top }
      : { x: 0, y: 0, width: screen.width, height: screen.height };
  };

  // How many first bytes of the message starting with `type` are read; the rest of 2 and 6 is passed over.
  function headLength(type: number): number {
    switch (type) {
      case 0:
        return 20;
      case 2:
        return 4;
      case 3:
        return 10;
      case 4:
        return 8;
      case 5:
        return 6;
      case 6:
        return 8;
      default:
        throw new RfbProtocolError(`client message type ${type} is not RFB 3.8`);
    }
  }

  // How many head bytes the current step needs.
  function wanted(): number {
    if (stage === 'version') return 12;
    if (stage !== 'normal' || held === 0) return 1;
    return headLength(head.readUInt8(0));
  }

  function handle(message: Buffer): Buffer[] {
    switch (message.readUInt8(0)) {
      case 0:
        format = decodePixelFormat(message, 4);
        return [];
      case 3: {
        const screen = options.screen();
        const rect = clip(
          message.readUInt16BE(2),
          message.readUInt16BE(4),
          message.readUInt16BE(6),
          message.readUInt16BE(8),
          screen,
        );
        if (message.readUInt8(1) !== 0) {
          waiting = rect;
          return [];
        }
        return [encodeFramebufferUpdate(screen, rect, format)];
      }
      case 4:
        options.onInput({ kind: 'key', down: message.readUInt8(1) !== 0, keysym: message.readUInt32BE(4) });
        return [];
      case 5:
        options.onInput({
          kind: 'pointer',
          buttons: message.readUInt8(1),
          x: message.readUInt16BE(2),
          y: message.readUInt16BE(4),
        });
        return [];
      default:
        return [];
    }
  }

  // Acts on a complete head; answers what to send back.
  function advance(bytes: Buffer): Buffer[] {
    switch (stage) {
      case 'version':
        if (!/^RFB 003\.00[78]\n$/.test(bytes.toString('latin1')))
          throw new RfbProtocolError(
            `protocol version ${JSON.stringify(bytes.toString('latin1'))} is not 3.7 or 3.8`,
          );
        stage = 'security';
        return [Buffer.from([1, 1])];
      case 'security':
        if (bytes[0] !== 1) throw new RfbProtocolError(`security type ${bytes[0]} was not offered`);
        stage = 'init';
        return [Buffer.alloc(4)];
      case 'init': {
        stage = 'normal';
        const screen = options.screen();
        return [encodeServerInit(screen.width, screen.height, options.name)];
      }
      case 'normal':
        if (bytes.readUInt8(0) === 2) {
          skip = 4 * bytes.readUInt16BE(2);
          return [];
        }
        if (bytes.readUInt8(0) === 6) {
          const length = bytes.readUInt32BE(4);
          if (length > maxCutTextBytes)
            throw new RfbProtocolError(`ClientCutText of ${length} bytes is over ${maxCutTextBytes}`);
          cutText = { text: '', left: length };
          return takeCutText(Buffer.alloc(0));
        }
        return handle(bytes);
    }
  }

  // Takes the next bytes of a cut text, keeping its start; the text goes to the guest as it ends.
  function takeCutText(bytes: Buffer): Buffer[] {
    if (!cutText) return [];
    const room = keptCutTextChars - cutText.text.length;
    if (room > 0) cutText.text += bytes.subarray(0, room).toString('latin1');
    cutText.left -= bytes.length;
    if (cutText.left > 0) return [];
    const { text } = cutText;
    cutText = undefined;
    options.onInput({ kind: 'cut-text', text });
    return [];
  }

  return {
    greeting: () => Buffer.from('RFB 003.008\n', 'latin1'),
    receive(chunk) {
      const out: Buffer[] = [];
      let at = 0;
      for (;;) {
        if (cutText) {
          if (at === chunk.length) return out;
          const taken = Math.min(cutText.left, chunk.length - at);
          out.push(...takeCutText(chunk.subarray(at, at + taken)));
          at += taken;
          continue;
        }
        if (skip > 0) {
          if (at === chunk.length) return out;
          const passed = Math.min(skip, chunk.length - at);
          skip -= passed;
          at += passed;
          continue;
        }
        const want = wanted();
        if (held < want) {
          if (at === chunk.length) return out;
          const taken = Math.min(want - held, chunk.length - at);
          head.set(chunk.subarray(at, at + taken), held);
          held += taken;
          at += taken;
          // asked again: a message's type byte tells how much more of it there is
          continue;
        }
        const bytes = head.subarray(0, held);
        held = 0;
        out.push(...advance(bytes));
      }
    },
    isNormal: () => stage === 'normal',
    changed() {
      if (!waiting) return [];
      const rect = waiting;
      waiting = undefined;
      return [encodeFramebufferUpdate(options.screen(), rect, format)];
    },
  };
}
