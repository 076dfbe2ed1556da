import { describe, expect, it } from 'vitest';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import {
  createRfbSession,
  encodeServerCutText,
  keptCutTextChars,
} from '../../../src/testing/kubevirt/rfb-server.js';
import { countBytesMoved } from '../../support/bytes-moved.js';

const handshake = Buffer.concat([Buffer.from('RFB 003.008\n', 'latin1'), Buffer.of(1), Buffer.of(1)]);
const fullUpdateRequest = Buffer.from([3, 0, 0, 0, 0, 0, 1, 64, 0, 200]);

function cutText(length: number): Buffer {
  const head = Buffer.from([6, 0, 0, 0, 0, 0, 0, 0]);
  head.writeUInt32BE(length, 4);
  return Buffer.concat([head, Buffer.alloc(length, 0x61)]);
}

// Opens a session, then sends a paste of `length` bytes in messages of `size`; answers the bytes it copied.
function paste(length: number, size: number) {
  const rfb = createRfbSession({
    name: 'desk-1',
    screen: () => renderScreen({ name: 'desk-1' }),
    onInput: () => {},
  });
  rfb.receive(handshake);
  const bytes = cutText(length);
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += size)
    chunks.push(bytes.subarray(offset, offset + size));
  const moved = countBytesMoved(() => {
    for (const chunk of chunks) expect(rfb.receive(chunk)).toEqual([]);
  });
  return { rfb, moved };
}

describe('the simulated RFB server on a paste', () => {
  it('passes over a ClientCutText in tiny messages without copying it, and answers the next update request', () => {
    for (const size of [16, 65_536]) {
      const { rfb, moved } = paste(100_000, size);
      // the 8-byte head of the paste, and nothing of its text
      expect(moved, `bytes copied with ${size}-byte messages`).toBeLessThanOrEqual(8);
      const [update] = rfb.receive(fullUpdateRequest);
      expect(update?.length).toBe(16 + 320 * 200 * 4);
    }
  });

  it('copies the same few bytes for a paste ten times as long', () => {
    expect(paste(1_000_000, 16).moved).toBe(paste(100_000, 16).moved);
  });
});

describe('the simulated RFB guest clipboard', () => {
  it('hands on the text of a ClientCutText split anywhere, keeping its first characters, and encodes its own copy', () => {
    const texts: string[] = [];
    const rfb = createRfbSession({
      name: 'desk-1',
      screen: () => renderScreen({ name: 'desk-1' }),
      onInput: (input) => {
        if (input.kind === 'cut-text') texts.push(input.text);
      },
    });
    rfb.receive(handshake);
    const pasted = Buffer.from('café au lait', 'latin1');
    const message = Buffer.concat([Buffer.from([6, 0, 0, 0, 0, 0, 0, pasted.length]), pasted]);
    for (const byte of message) rfb.receive(Buffer.of(byte));
    rfb.receive(cutText(keptCutTextChars + 100));
    expect(texts).toEqual(['café au lait', 'a'.repeat(keptCutTextChars)]);
    expect(encodeServerCutText('naïve ✓')).toEqual(
      Buffer.concat([Buffer.from([3, 0, 0, 0, 0, 0, 0, 7]), Buffer.from('naïve ?', 'latin1')]),
    );
  });
});
