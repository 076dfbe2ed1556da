import type { MemberConsole } from '../desktop-backend.js';
import { createRfbInputParser } from './rfb-input.js';

/**
 * Tells, message by message, whether what a browser sent on a console is user input: for `vnc` a KeyEvent or
 * PointerEvent (see {@link createRfbInputParser}); for `serial` any bytes; for `terminal` any typed bytes (binary
 * messages; a text message only resizes).
 *
 * @example
 * ```ts
 * const isInput = createConsoleInputDetector('vnc');
 * client.on('message', (data: Buffer, isBinary: boolean) => {
 *   if (isInput(data, isBinary)) sessions.noteInput({ namespace, member });
 * });
 * ```
 * @category broker
 */
export function createConsoleInputDetector(
  protocol: MemberConsole,
): (data: Uint8Array, isBinary: boolean) => boolean {
  switch (protocol) {
    case 'vnc': {
      const parser = createRfbInputParser();
      return (data) => parser.push(data).input > 0;
    }
    case 'serial':
      return (data) => data.length > 0;
    case 'terminal':
      return (data, isBinary) => isBinary && data.length > 0;
  }
}
