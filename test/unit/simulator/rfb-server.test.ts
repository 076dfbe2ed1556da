import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  keyLabel,
  nameLayout,
  renderScreen,
  screenColours,
  screenHeight,
  screenWidth,
} from '../../../src/testing/kubevirt/rfb-screen.js';
import {
  createRfbSession,
  encodePixelFormat,
  encodeRawPixels,
  type PixelFormat,
  type RfbInput,
  RfbProtocolError,
  serverPixelFormat,
} from '../../../src/testing/kubevirt/rfb-server.js';
import { isGlyphPixel } from '../../../src/testing/kubevirt/screen-font.js';

const version = Buffer.from('RFB 003.008\n', 'latin1');

function session(name = 'desk-1') {
  const inputs: RfbInput[] = [];
  let state = { name } as { name: string; lastKeysym?: number };
  const rfb = createRfbSession({
    name,
    screen: () => renderScreen(state),
    onInput: (input) => {
      inputs.push(input);
      if (input.kind === 'key') state = { ...state, lastKeysym: input.keysym };
    },
  });
  return { rfb, inputs };
}

const keyEvent = (keysym: number, down = true) => {
  const message = Buffer.alloc(8);
  message.writeUInt8(4, 0);
  message.writeUInt8(down ? 1 : 0, 1);
  message.writeUInt32BE(keysym, 4);
  return message;
};
const updateRequest = (incremental: boolean, width = screenWidth, height = screenHeight) => {
  const message = Buffer.alloc(10);
  message.writeUInt8(3, 0);
  message.writeUInt8(incremental ? 1 : 0, 1);
  message.writeUInt16BE(width, 6);
  message.writeUInt16BE(height, 8);
  return message;
};
const handshake = Buffer.concat([version, Buffer.from([1]), Buffer.from([1])]);

describe('the simulated RFB 3.8 server', () => {
  it('opens with version 3.8, offers only security type None and sends ServerInit with the VM name', () => {
    const { rfb } = session('desk-1');
    expect(rfb.greeting().toString('latin1')).toBe('RFB 003.008\n');
    expect(rfb.receive(version)).toEqual([Buffer.from([1, 1])]);
    expect(rfb.receive(Buffer.from([1]))).toEqual([Buffer.alloc(4)]);
    const [init] = rfb.receive(Buffer.from([1]));
    expect(init?.readUInt16BE(0)).toBe(320);
    expect(init?.readUInt16BE(2)).toBe(200);
    expect(init?.subarray(4, 20)).toEqual(encodePixelFormat(serverPixelFormat));
    expect(init?.readUInt32BE(20)).toBe(6);
    expect(init?.subarray(24).toString()).toBe('desk-1');
  });

  it('refuses another protocol version, a security type it did not offer, and unknown messages', () => {
    expect(() => session().rfb.receive(Buffer.from('RFB 003.003\n'))).toThrow(RfbProtocolError);
    expect(() => session().rfb.receive(Buffer.from('GET / HTTP/1.1\r\n'))).toThrow(/not 3\.7 or 3\.8/);
    const { rfb } = session();
    rfb.receive(version);
    expect(() => rfb.receive(Buffer.from([2]))).toThrow(/security type 2/);
    const normal = session().rfb;
    normal.receive(handshake);
    expect(() => normal.receive(Buffer.from([99]))).toThrow(/type 99/);
  });

  it('refuses a cut text over its bound instead of buffering it', () => {
    const { rfb } = session();
    rfb.receive(handshake);
    const head = Buffer.alloc(8);
    head.writeUInt8(6, 0);
    head.writeUInt32BE(64 << 20, 4);
    expect(() => rfb.receive(head)).toThrow(/ClientCutText/);
  });

  it('answers a full update request at once, and an incremental one when a key changes the screen', () => {
    const { rfb, inputs } = session('desk-1');
    rfb.receive(handshake);
    const [full] = rfb.receive(updateRequest(false));
    expect(full?.length).toBe(16 + 320 * 200 * 4);
    expect(full?.readInt32BE(12)).toBe(0);
    expect(rfb.receive(updateRequest(true))).toEqual([]);
    expect(rfb.receive(keyEvent(0x61))).toEqual([]);
    expect(inputs).toEqual([{ kind: 'key', down: true, keysym: 0x61 }]);
    const [update] = rfb.changed();
    expect(update?.subarray(16)).toEqual(
      encodeRawPixels(
        renderScreen({ name: 'desk-1', lastKeysym: 0x61 }),
        { x: 0, y: 0, width: 320, height: 200 },
        serverPixelFormat,
      ),
    );
    expect(rfb.changed()).toEqual([]);
  });

  it('parses the same messages however the bytes are split', () => {
    const stream = Buffer.concat([
      handshake,
      keyEvent(0x62),
      Buffer.from([5, 1, 0, 10, 0, 20]),
      keyEvent(0x62, false),
    ]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 8 }), (cuts) => {
        const { rfb, inputs } = session();
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        let from = 0;
        for (const to of [...points, stream.length]) {
          rfb.receive(stream.subarray(from, to));
          from = to;
        }
        expect(inputs).toEqual([
          { kind: 'key', down: true, keysym: 0x62 },
          { kind: 'pointer', buttons: 1, x: 10, y: 20 },
          { kind: 'key', down: false, keysym: 0x62 },
        ]);
      }),
    );
  });

  it("encodes pixels in the client's format, as noVNC asks for it (red in the low byte)", () => {
    const noVnc: PixelFormat = { ...serverPixelFormat, redShift: 0, blueShift: 16 };
    const screen = { width: 2, height: 1, rgb: Uint8Array.from([255, 0, 0, 0, 0, 255]) };
    const rect = { x: 0, y: 0, width: 2, height: 1 };
    expect([...encodeRawPixels(screen, rect, noVnc)]).toEqual([255, 0, 0, 0, 0, 0, 255, 0]);
    expect([...encodeRawPixels(screen, rect, serverPixelFormat)]).toEqual([0, 0, 255, 0, 255, 0, 0, 0]);
    const sixteen: PixelFormat = {
      ...serverPixelFormat,
      bitsPerPixel: 16,
      depth: 16,
      redMax: 31,
      greenMax: 63,
      blueMax: 31,
      redShift: 11,
      greenShift: 5,
      blueShift: 0,
      bigEndian: true,
    };
    expect([...encodeRawPixels(screen, rect, sixteen)]).toEqual([0xf8, 0x00, 0x00, 0x1f]);
  });
});

describe('the simulated screen', () => {
  it('draws the name glyph by glyph at its layout, in the name colour', () => {
    const screen = renderScreen({ name: 'a' });
    const { x, y, scale } = nameLayout('a');
    const colourAt = (px: number, py: number) => [
      ...screen.rgb.subarray((py * 320 + px) * 3, (py * 320 + px) * 3 + 3),
    ];
    // "a": the top row is .###., so its first pixel is background and its second lit
    expect(colourAt(x, y)).toEqual([...screenColours.background]);
    expect(colourAt(x + scale, y)).toEqual([...screenColours.name]);
    expect(isGlyphPixel('A', 1, 0)).toBe(true);
  });

  it('labels printable keys by their character and others by their keysym', () => {
    expect([keyLabel(0x61), keyLabel(0x5a), keyLabel(0xff0d), keyLabel(0x20)]).toEqual([
      'a',
      'Z',
      '0xff0d',
      '0x20',
    ]);
  });

  it('shrinks a long name to fit the screen', () => {
    expect(nameLayout('devpool-1').scale).toBe(3);
    expect(nameLayout('a'.repeat(40)).scale).toBe(1);
  });
});
