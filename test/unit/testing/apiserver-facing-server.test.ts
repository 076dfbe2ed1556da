import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiserverFacingServer } from '../../../src/testing/apiserver-facing-server.js';
import { createCertificateAuthority, issueCertificate } from '../../../src/testing/certificates.js';

const dir = mkdtempSync(join(tmpdir(), 'apiserver-facing-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// With its defaults Node closes an idle connection 6 s after its last answer (a 5 s timeout plus a 1 s buffer).
const nodeDefaultIdleCloseMs = 6_000;

describe('a server the apiserver calls', () => {
  it('keeps an idle keep-alive connection open past Node’s default timeout, so the apiserver closes it first', async () => {
    const ca = createCertificateAuthority(dir, 'ca');
    const serving = issueCertificate(dir, 'serving', ca, {
      kind: 'server',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    const server = createApiserverFacingServer(
      { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: ca.certPem },
      (_request, response) => response.end('ok'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem });
    try {
      let closedAt: number | undefined;
      const answered = new Promise<string>((resolve) => {
        socket.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8')));
      });
      socket.on('close', () => {
        closedAt = performance.now();
      });
      socket.write('GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: keep-alive\r\n\r\n');
      expect(await answered).toMatch(/^HTTP\/1\.1 200/);
      const idleSince = performance.now();
      // A real wait: the timer under test is the server's socket timer, which no injected clock drives.
      await new Promise((resolve) => setTimeout(resolve, nodeDefaultIdleCloseMs + 2_000));
      expect(closedAt, 'the server closed the idle connection').toBeUndefined();
      expect(performance.now() - idleSince).toBeGreaterThan(nodeDefaultIdleCloseMs);
    } finally {
      socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 20_000);
});
