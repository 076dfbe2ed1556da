import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createConsoleInputDetector } from '../../../src/broker/console-input.js';
import { createRfbInputParser } from '../../../src/broker/rfb-input.js';

const handshake = Buffer.concat([Buffer.from('RFB 003.008\n', 'latin1'), Buffer.of(1), Buffer.of(1)]);
const setPixelFormat = Buffer.concat([Buffer.of(0, 0, 0, 0), Buffer.alloc(16)]);
const setEncodings = Buffer.from([2, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x21]);
const updateRequest = Buffer.from([3, 1, 0, 0, 0, 0, 0, 64, 0, 48]);
const keyDown = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x61]);
const pointer = Buffer.from([5, 1, 0, 10, 0, 20]);
const cutText = Buffer.concat([Buffer.from([6, 0, 0, 0, 0, 0, 0, 3]), Buffer.from('abc')]);
const qemuKey = Buffer.from([255, 0, 0, 1, 0, 0, 0, 0x61, 0, 0, 0, 0x1e]);
const fence = Buffer.from([248, 0, 0, 0, 0, 0, 0, 0, 2, 7, 7]);
const desktopSize = Buffer.concat([Buffer.from([251, 0, 4, 0, 3, 0, 1, 0]), Buffer.alloc(16)]);

function count(chunks: readonly Buffer[]): number {
  const parser = createRfbInputParser();
  return chunks.reduce((sum, chunk) => sum + parser.push(chunk).input, 0);
}

describe('createRfbInputParser', () => {
  it.each<[string, Buffer[], number]>([
    ['counts nothing in the handshake', [handshake], 0],
    ['counts no screen requests or settings', [handshake, setPixelFormat, setEncodings, updateRequest], 0],
    ['counts a key event', [handshake, updateRequest, keyDown], 1],
    ['counts a pointer event', [handshake, pointer], 1],
    ['counts QEMU extended key events', [handshake, qemuKey, qemuKey], 2],
    [
      'skips clipboard text, fences and size requests',
      [handshake, cutText, fence, desktopSize, updateRequest],
      0,
    ],
    [
      'follows VNC authentication: the 16-byte response is no input',
      [
        Buffer.from('RFB 003.008\n', 'latin1'),
        Buffer.of(2),
        Buffer.alloc(16, 4),
        Buffer.of(1),
        updateRequest,
      ],
      0,
    ],
    [
      'counts every message after RFB 3.3, which it cannot follow',
      [Buffer.from('RFB 003.003\n', 'latin1'), Buffer.of(1), updateRequest],
      2,
    ],
    [
      'counts every message after an unknown message type',
      [handshake, Buffer.of(99, 1, 2), updateRequest],
      2,
    ],
  ])('%s', (_, chunks, expected) => {
    expect(count(chunks)).toBe(expected);
  });

  it('counts the same input however the bytes are split or joined', () => {
    const messages = [
      setPixelFormat,
      setEncodings,
      updateRequest,
      keyDown,
      cutText,
      pointer,
      qemuKey,
      fence,
      desktopSize,
    ];
    const stream = fc.array(fc.integer({ min: 0, max: messages.length - 1 }), { maxLength: 30 });
    fc.assert(
      fc.property(stream, fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1 }), (picked, cuts) => {
        const bytes = Buffer.concat([handshake, ...picked.map((index) => messages[index] as Buffer)]);
        const expected = picked.filter((index) => [3, 5, 6].includes(index)).length;
        const chunks: Buffer[] = [];
        let offset = 0;
        for (let index = 0; offset < bytes.length; index += 1) {
          const size = cuts[index % cuts.length] ?? 1;
          chunks.push(bytes.subarray(offset, offset + size));
          offset += size;
        }
        expect(count(chunks)).toBe(expected);
      }),
    );
  });

  it('says when it lost the framing', () => {
    const parser = createRfbInputParser();
    parser.push(handshake);
    expect(parser.lost).toBe(false);
    parser.push(Buffer.of(99));
    expect(parser.lost).toBe(true);
  });
});

describe('createConsoleInputDetector', () => {
  it('takes serial bytes as input', () => {
    const isInput = createConsoleInputDetector('serial');
    expect(isInput(Buffer.from('ls\r'), true)).toBe(true);
    expect(isInput(Buffer.alloc(0), true)).toBe(false);
  });

  it('takes typed terminal bytes as input, and a resize as none', () => {
    const isInput = createConsoleInputDetector('terminal');
    expect(isInput(Buffer.from('ls\r'), true)).toBe(true);
    expect(isInput(Buffer.from('{"cols":80,"rows":24}'), false)).toBe(false);
  });

  it('takes only key and pointer events of a VNC console as input', () => {
    const isInput = createConsoleInputDetector('vnc');
    expect(isInput(handshake, true)).toBe(false);
    expect(isInput(updateRequest, true)).toBe(false);
    expect(isInput(keyDown, true)).toBe(true);
  });
});
