import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';

/** TLS material of a server the apiserver calls: its serving pair and the CA of the client certificates it accepts. */
export interface ApiserverFacingTls {
  certPem: string;
  keyPem: string;
  /** Client certificates signed by this CA are marked authorized; others are still accepted, and the handler decides. */
  clientCaPem: string;
}

/**
 * How long an idle connection from the apiserver stays open: longer than the idle-connection timeout of the
 * apiserver's Go transports (90 s), so the apiserver closes it first. With Node's default (5 s) the server closed
 * connections the apiserver was about to reuse, and the apiserver failed such a request with "connection reset by
 * peer" instead of sending it again.
 */
export const apiserverIdleConnectionMs = 120_000;

/** An HTTPS server for the apiserver to call (an aggregated API, a webhook, a kubelet). */
export function createApiserverFacingServer(
  tls: ApiserverFacingTls,
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): Server {
  const server = createServer(
    { cert: tls.certPem, key: tls.keyPem, ca: tls.clientCaPem, requestCert: true, rejectUnauthorized: false },
    handle,
  );
  server.keepAliveTimeout = apiserverIdleConnectionMs;
  return server;
}
