import { describe, expect, it } from 'vitest';
import { createRfbInputParser } from '../../../src/broker/rfb-input.js';
import { countBytesMoved } from '../../support/bytes-moved.js';

const handshake = Buffer.concat([Buffer.from('RFB 003.008\n', 'latin1'), Buffer.of(1), Buffer.of(1)]);
const keyDown = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x61]);

// A legal paste: ClientCutText with `length` bytes of text.
function cutText(length: number): Buffer {
  const head = Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]);
  head.writeUInt32BE(length, 4);
  return Buffer.concat([head, Buffer.alloc(length, 0x61)]);
}

function split(bytes: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += size)
    chunks.push(bytes.subarray(offset, offset + size));
  return chunks;
}

// Feeds a handshake, a paste and a key press in chunks of `size`; answers the input counted and the bytes copied.
function paste(length: number, size: number): { input: number; moved: number } {
  const parser = createRfbInputParser();
  const chunks = split(Buffer.concat([handshake, cutText(length), keyDown]), size);
  let input = 0;
  const moved = countBytesMoved(() => {
    for (const chunk of chunks) input += parser.push(chunk).input;
  });
  return { input, moved };
}

describe('createRfbInputParser on a paste', () => {
  it('copies only the heads of messages, never a paste, however small its messages are', () => {
    for (const size of [16, 1, 65_536]) {
      const { input, moved } = paste(100_000, size);
      // the key press after the paste is found: the parser kept the framing
      expect(input).toBe(1);
      // the version, the two handshake bytes, the paste's 8-byte head and the key's type byte, and no more
      expect(moved, `bytes copied with ${size}-byte messages`).toBeLessThanOrEqual(32);
    }
  });

  it('copies the same few bytes for a paste ten times as long', () => {
    expect(paste(1_000_000, 16).moved).toBe(paste(100_000, 16).moved);
  });
});
