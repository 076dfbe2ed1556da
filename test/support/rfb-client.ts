import type { WebSocket } from 'ws';

/** A frame as the client decoded it: three bytes per pixel, row by row. */
export interface DecodedFrame {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** A small RFB 3.8 client over a websocket, as noVNC speaks it: no authentication, raw encoding. */
export interface RfbClient {
  width: number;
  height: number;
  name: string;
  /** Asks for the whole screen (non-incremental) and decodes the answer. */
  requestFrame(): Promise<DecodedFrame>;
  /** Asks for an incremental update and decodes it once the server sends one. */
  requestChange(): Promise<DecodedFrame>;
  /** Presses and releases a key. */
  typeKey(keysym: number): void;
}

/** Reads exact byte counts from a websocket's binary messages, whatever their framing. */
export function createByteReader(socket: WebSocket): (length: number) => Promise<Buffer> {
  let buffered = Buffer.alloc(0);
  let waiter:
    | { length: number; resolve: (bytes: Buffer) => void; reject: (error: Error) => void }
    | undefined;
  let ended: Error | undefined;
  const pump = () => {
    if (!waiter) return;
    if (buffered.length >= waiter.length) {
      const { length, resolve } = waiter;
      waiter = undefined;
      const head = buffered.subarray(0, length);
      buffered = buffered.subarray(length);
      resolve(head);
    } else if (ended) {
      const { reject } = waiter;
      waiter = undefined;
      reject(ended);
    }
  };
  socket.on('message', (data: Buffer) => {
    buffered = Buffer.concat([buffered, data]);
    pump();
  });
  socket.once('close', (code, reason) => {
    ended = new Error(`the websocket closed (${code} ${reason.toString()})`);
    pump();
  });
  // a console stream of the SDK arrives paused until someone listens
  socket.resume();
  return (length) =>
    new Promise((resolve, reject) => {
      waiter = { length, resolve, reject };
      pump();
    });
}

/**
 * Runs the RFB 3.8 handshake with security type None on an open websocket; pass the reader made when the socket
 * was created when the server may have spoken before `open` was seen.
 */
export async function connectRfb(
  socket: WebSocket,
  read: (length: number) => Promise<Buffer> = createByteReader(socket),
): Promise<RfbClient> {
  const version = (await read(12)).toString('latin1');
  if (version !== 'RFB 003.008\n') throw new Error(`unexpected version ${JSON.stringify(version)}`);
  socket.send(Buffer.from('RFB 003.008\n', 'latin1'));
  const count = (await read(1)).readUInt8(0);
  const types = [...(await read(count))];
  if (!types.includes(1)) throw new Error(`security type None not offered: ${types.join(',')}`);
  socket.send(Buffer.from([1]));
  const result = (await read(4)).readUInt32BE(0);
  if (result !== 0) throw new Error(`security failed: ${result}`);
  socket.send(Buffer.from([1]));
  const init = await read(24);
  const width = init.readUInt16BE(0);
  const height = init.readUInt16BE(2);
  const redShift = init.readUInt8(14);
  const greenShift = init.readUInt8(15);
  const blueShift = init.readUInt8(16);
  const name = (await read(init.readUInt32BE(20))).toString('utf8');

  async function readUpdate(): Promise<DecodedFrame> {
    const head = await read(4);
    if (head.readUInt8(0) !== 0) throw new Error(`unexpected server message ${head.readUInt8(0)}`);
    const frame = { width, height, rgb: new Uint8Array(width * height * 3) };
    for (let rects = head.readUInt16BE(2); rects > 0; rects -= 1) {
      const rect = await read(12);
      const [x, y, w, h] = [0, 2, 4, 6].map((at) => rect.readUInt16BE(at)) as [
        number,
        number,
        number,
        number,
      ];
      if (rect.readInt32BE(8) !== 0) throw new Error('only raw rectangles are expected');
      const pixels = await read(w * h * 4);
      for (let row = 0; row < h; row += 1)
        for (let column = 0; column < w; column += 1) {
          const pixel = pixels.readUInt32LE((row * w + column) * 4);
          const at = ((y + row) * width + x + column) * 3;
          frame.rgb[at] = (pixel >>> redShift) & 0xff;
          frame.rgb[at + 1] = (pixel >>> greenShift) & 0xff;
          frame.rgb[at + 2] = (pixel >>> blueShift) & 0xff;
        }
    }
    return frame;
  }

  const request = (incremental: boolean) => {
    const message = Buffer.alloc(10);
    message.writeUInt8(3, 0);
    message.writeUInt8(incremental ? 1 : 0, 1);
    message.writeUInt16BE(width, 6);
    message.writeUInt16BE(height, 8);
    socket.send(message);
  };

  return {
    width,
    height,
    name,
    requestFrame() {
      request(false);
      return readUpdate();
    },
    requestChange() {
      request(true);
      return readUpdate();
    },
    typeKey(keysym) {
      for (const down of [1, 0]) {
        const message = Buffer.alloc(8);
        message.writeUInt8(4, 0);
        message.writeUInt8(down, 1);
        message.writeUInt32BE(keysym, 4);
        socket.send(message);
      }
    },
  };
}

/** A legal ClientCutText of `length` bytes of text, cut into websocket messages of `size` bytes. */
export function pasteMessages(length: number, size: number): Buffer[] {
  const message = Buffer.alloc(8 + length, 0x61);
  message.writeUInt32BE(0x06000000, 0);
  message.writeUInt32BE(length, 4);
  const messages: Buffer[] = [];
  for (let offset = 0; offset < message.length; offset += size)
    messages.push(message.subarray(offset, offset + size));
  return messages;
}

/** Sends messages of `size` bytes 64 KiB at a time, each batch once the one before has left this process. */
export async function sendPaced(socket: WebSocket, messages: readonly Buffer[], size: number): Promise<void> {
  const perBatch = Math.max(1, Math.floor(65_536 / size));
  for (let from = 0; from < messages.length; from += perBatch) {
    const batch = messages.slice(from, from + perBatch);
    await new Promise<void>((resolve, reject) => {
      batch.forEach((message, index) => {
        socket.send(message, { binary: true }, (error) => {
          if (error) reject(error);
          else if (index === batch.length - 1) resolve();
        });
      });
    });
  }
}
