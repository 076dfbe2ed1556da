import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { type ConsoleRelay, relayConsole } from '../../../src/broker/console-relay.js';
import { waitFor } from '../../../src/testing/wait-for.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

// A desktop that takes whatever comes, a relay in front of it and a browser, all on loopback.
async function relayed() {
  const desktopServer = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => desktopServer.once('listening', resolve));
  let received = 0;
  const messages: Buffer[] = [];
  desktopServer.on('connection', (socket) =>
    socket.on('message', (data: Buffer) => {
      received += data.length;
      messages.push(data);
    }),
  );
  const desktop = new WebSocket(`ws://127.0.0.1:${(desktopServer.address() as AddressInfo).port}`);
  await new Promise((resolve) => desktop.once('open', resolve));
  desktop.pause();
  const front = new WebSocketServer({ noServer: true });
  const server = createServer();
  let relay: ConsoleRelay | undefined;
  server.on('upgrade', (request, socket, head) =>
    front.handleUpgrade(request, socket, head, (client) => {
      relay = relayConsole(client, desktop, { highWaterBytes: 1 << 20 });
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const browser = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`, {
    perMessageDeflate: false,
  });
  await new Promise((resolve) => browser.once('open', resolve));
  closers.push(() => {
    browser.terminate();
    desktop.terminate();
    desktopServer.close();
    server.close();
  });
  return {
    browser,
    relay: await waitFor(() => relay, { describe: 'the relay to start' }),
    received: () => received,
    messages,
  };
}

describe('relayConsole under a flood of tiny messages', () => {
  it('relays at most one read of a console per turn of the event loop, so the others get theirs', async () => {
    const { browser, relay, received } = await relayed();
    const paste = 1_000_000;
    for (let sent = 0; sent < paste; sent += 16) browser.send(Buffer.alloc(16));
    // the bytes relayed between two turns of the event loop, the most of any turn
    let most = 0;
    let last = 0;
    const turns = new Promise<void>((resolve) => {
      const turn = () => {
        const now = relay.stats().bytesToDesktop;
        most = Math.max(most, now - last);
        last = now;
        if (now < paste) setImmediate(turn);
        else resolve();
      };
      setImmediate(turn);
    });
    await turns;
    await waitFor(() => received() === paste, { describe: 'the desktop to receive the whole paste' });
    // one read is at most 64 KiB of frames: 16 bytes of payload in every 22
    expect(most).toBeLessThanOrEqual(65_536);
  });

  it('sends on the tiny messages of one read as one message to the desktop, every byte in order', async () => {
    const { browser, received, messages } = await relayed();
    const sent: Buffer[] = [];
    for (let index = 0; index < 62_500; index += 1) {
      const message = Buffer.alloc(16);
      message.writeUInt32BE(index, 0);
      sent.push(message);
      browser.send(message);
    }
    await waitFor(() => received() === 1_000_000, { describe: 'the desktop to receive every message' });
    expect(Buffer.concat(messages).equals(Buffer.concat(sent))).toBe(true);
    // a read carries about 3,000 of them; a tenth as many messages leaves room for short reads
    expect(messages.length).toBeLessThan(sent.length / 10);
  });
});
