import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { probeTcp } from '../../src/probe-tcp.js';
import { type StalledListener, startStalledListener } from './connect-planner/stalled-listener.js';

// Loopback addresses of this file only, so parallel test files never share a port.
const host = '127.77.1.1';
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function listen(address: string): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  cleanups.push(() => server.close());
  return { server, port: (server.address() as { port: number }).port };
}

async function stalled(address: string): Promise<StalledListener> {
  const listener = await startStalledListener(address);
  cleanups.push(() => listener.close());
  return listener;
}

describe('probeTcp', () => {
  it('reports a listening port as answered', async () => {
    const { port } = await listen(host);
    expect(await probeTcp(host, port)).toEqual({ host, port, outcome: 'answered', timeoutMs: 1500 });
  });

  it('reports a closed port as refused', async () => {
    const { server, port } = await listen(host);
    await new Promise((resolve) => server.close(resolve));
    expect((await probeTcp(host, port)).outcome).toBe('refused');
  });

  it('probes afresh on every call, so a listener that goes away is seen at the next call', async () => {
    const { server, port } = await listen('127.77.1.2');
    expect((await probeTcp('127.77.1.2', port)).outcome).toBe('answered');
    await new Promise((resolve) => server.close(resolve));
    expect((await probeTcp('127.77.1.2', port)).outcome).toBe('refused');
  });

  it('gives up after the timeout when the handshake gets no answer', async () => {
    const listener = await stalled('127.77.1.3');
    const result = await probeTcp(listener.host, listener.port, { timeoutMs: 200 });
    expect(result).toEqual({
      host: listener.host,
      port: listener.port,
      outcome: 'timed-out',
      timeoutMs: 200,
    });
  });

  it('rejects with the reason of an abort that comes while it waits', async () => {
    const listener = await stalled('127.77.1.4');
    const controller = new AbortController();
    const probe = probeTcp(listener.host, listener.port, { timeoutMs: 60_000, signal: controller.signal });
    const reason = new Error('the user closed the page');
    controller.abort(reason);
    await expect(probe).rejects.toBe(reason);
  });

  it('does not connect when the signal was aborted before the call', async () => {
    const server = createServer();
    let connections = 0;
    server.on('connection', (socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.77.1.5', resolve));
    cleanups.push(() => server.close());
    const port = (server.address() as { port: number }).port;
    await expect(probeTcp('127.77.1.5', port, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect((await probeTcp('127.77.1.5', port)).outcome).toBe('answered');
    expect(connections).toBe(1);
  });

  it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses the timeout %d with INVALID_INPUT',
    async (timeoutMs) => {
      const error = await probeTcp(host, 3389, { timeoutMs }).catch((caught: unknown) => caught);
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    },
  );
});
