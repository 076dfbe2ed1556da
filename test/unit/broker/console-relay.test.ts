import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { type ConsoleRelay, relayConsole } from '../../../src/broker/console-relay.js';
import { waitFor } from '../../../src/testing/wait-for.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function listen(server: Server | WebSocketServer): Promise<number> {
  if (server instanceof WebSocketServer) await new Promise((resolve) => server.once('listening', resolve));
  else await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * A desktop (a ws server that sends `frames` messages of `frameBytes` when asked), a relay in front of it, and a
 * browser connected to the relay, all on loopback.
 */
async function relayed(frames = 0, frameBytes = 0) {
  const desktopServer = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  const desktopSide: WebSocket[] = [];
  desktopServer.on('connection', (socket) => {
    desktopSide.push(socket);
    socket.on('message', () => {
      for (let index = 0; index < frames; index += 1) socket.send(Buffer.alloc(frameBytes));
    });
  });
  const desktop = new WebSocket(`ws://127.0.0.1:${await listen(desktopServer)}`);
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
  const browser = new WebSocket(`ws://127.0.0.1:${await listen(server)}`);
  await new Promise((resolve) => browser.once('open', resolve));
  closers.push(() => {
    browser.terminate();
    desktop.terminate();
    desktopServer.close();
    server.close();
  });
  const running = await waitFor(() => relay, { describe: 'the relay to start' });
  return {
    browser,
    desktop,
    desktopSide: await waitFor(() => desktopSide[0], { describe: 'the desktop side' }),
    relay: running,
  };
}

const closeOf = (socket: WebSocket) =>
  new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );

describe('relayConsole', () => {
  it('stops reading the desktop while the browser has more than the bound queued, and loses nothing', async () => {
    const frameBytes = 256 * 1024;
    const { browser, relay } = await relayed(80, frameBytes);
    browser.pause();
    browser.send('go');
    let last = -1;
    const held = await waitFor(
      () => {
        const stats = relay.stats();
        const still = stats.bytesToClient === last && stats.bufferedToClient > 0;
        last = stats.bytesToClient;
        return still ? stats : undefined;
      },
      { describe: 'the relay to hold the desktop back' },
    );
    expect(held.bytesToClient).toBeLessThan(80 * frameBytes);
    expect(held.bufferedToClient).toBeLessThanOrEqual((1 << 20) + frameBytes);
    let received = 0;
    browser.on('message', (data: Buffer) => {
      received += data.length;
    });
    browser.resume();
    await waitFor(() => received === 80 * frameBytes, { describe: 'every frame to arrive' });
  });

  it("passes a side's close code and reason on, and closes an unsendable one as 1000", async () => {
    const { browser, desktopSide } = await relayed();
    const closed = closeOf(browser);
    desktopSide.close(4321, 'bye');
    expect(await closed).toEqual({ code: 4321, reason: 'bye' });

    const other = await relayed();
    const fromBrowser = closeOf(other.desktopSide);
    other.browser.close();
    expect((await fromBrowser).code).toBe(1000);
  });

  it('closes the other side with 1011 when one side drops without a close', async () => {
    const { browser, desktopSide, relay } = await relayed();
    const closed = closeOf(browser);
    desktopSide.terminate();
    expect(await closed).toEqual({ code: 1011, reason: "The desktop's console dropped." });
    await relay.done;
  });
});
