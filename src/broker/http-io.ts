import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VdiError } from '../errors.js';
import { maxBodyBytes } from './input-rules.js';

/** A request body as read: its bytes, or the fact that it was too large to read. */
export type BodyRead = { kind: 'body'; bytes: Uint8Array } | { kind: 'too-large' };

/** A request as the broker's router sees it, whatever server it came from. */
export interface BrokerRequest {
  method: string;
  /** The path as sent, still percent-encoded, without the query. */
  rawPath: string;
  query: URLSearchParams;
  headers: Headers;
  remoteAddress: string | undefined;
  /** The request's ID for the logs and the `X-Request-Id` answer header: the caller's when sane, else a new one. */
  requestId: string;
  readBody(): Promise<BodyRead>;
}

/** An answer of the broker's router. */
export interface BrokerResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function declaredTooLarge(contentLength: string | null | undefined): boolean {
  return contentLength !== null && contentLength !== undefined && Number(contentLength) > maxBodyBytes;
}

/**
 * Headers of a node:http request as fetch `Headers`, every repeat kept and joined as HTTP joins them. Node's
 * `headers` keeps only the first of some repeated headers (such as `From`), which would hide a second login.
 */
export function headersOfNode(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    for (const value of values ?? []) headers.append(name, value);
  }
  return headers;
}

/**
 * Reads a node:http request body up to {@link maxBodyBytes}. An oversized body is drained, not buffered, so the
 * answer can still be written on the same connection.
 *
 * @throws {@link VdiError} `CANCELLED` when the client closes the connection before the body ends: that is the
 *   client's choice, not a broker failure, so nothing is logged for it.
 */
export function readNodeBody(req: IncomingMessage): Promise<BodyRead> {
  // a framework's body parser got there first: the broker takes nothing from bodies anyway
  if (req.readableEnded) return Promise.resolve({ kind: 'body', bytes: new Uint8Array() });
  if (declaredTooLarge(req.headers['content-length'])) {
    req.resume();
    return Promise.resolve({ kind: 'too-large' });
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBodyBytes) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.off('end', onEnd);
      req.resume();
      resolve({ kind: 'too-large' });
    };
    const onEnd = () => resolve({ kind: 'body', bytes: Buffer.concat(chunks) });
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', (error) =>
      reject(
        new VdiError('CANCELLED', 'The client closed the connection before its request body arrived.', {
          cause: error,
        }),
      ),
    );
  });
}

/** Reads a fetch `Request` body up to {@link maxBodyBytes}, cancelling the stream beyond it. */
export async function readWebBody(request: Request): Promise<BodyRead> {
  if (declaredTooLarge(request.headers.get('content-length'))) return { kind: 'too-large' };
  if (request.body === null) return { kind: 'body', bytes: new Uint8Array() };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBodyBytes) {
      await reader.cancel();
      return { kind: 'too-large' };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { kind: 'body', bytes };
}

// An ID a proxy or client set is kept so one request reads the same in every log; anything else could forge lines.
const saneRequestId = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The `X-Request-Id` the caller sent when it is one plain token of at most 128 characters; otherwise a new UUID. */
export function requestIdOf(headers: Headers): string {
  const sent = headers.get('x-request-id');
  return sent !== null && saneRequestId.test(sent) ? sent : randomUUID();
}

/** Splits a request target into its raw path and its query. */
export function splitTarget(target: string): { rawPath: string; query: URLSearchParams } {
  const at = target.indexOf('?');
  return at === -1
    ? { rawPath: target, query: new URLSearchParams() }
    : { rawPath: target.slice(0, at), query: new URLSearchParams(target.slice(at + 1)) };
}

/** Writes a broker answer to a node:http response, with the request's ID when known. */
export function writeNodeResponse(res: ServerResponse, response: BrokerResponse, requestId?: string): void {
  res.writeHead(
    response.status,
    requestId === undefined ? response.headers : { ...response.headers, 'x-request-id': requestId },
  );
  res.end(response.body);
}

/** A node:http request as the router sees it; behind Express, `originalUrl` keeps what a mount point strips. */
export function nodeRequest(req: IncomingMessage): BrokerRequest {
  const target = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const headers = headersOfNode(req);
  return {
    method: req.method ?? 'GET',
    ...splitTarget(target),
    headers,
    remoteAddress: req.socket.remoteAddress,
    requestId: requestIdOf(headers),
    readBody: () => readNodeBody(req),
  };
}

/** A fetch `Request` as the router sees it; the peer address comes from the host, when it tells. */
export function webRequest(request: Request, remoteAddress: string | undefined): BrokerRequest {
  const url = new URL(request.url);
  return {
    method: request.method,
    rawPath: url.pathname,
    query: url.searchParams,
    headers: request.headers,
    remoteAddress,
    requestId: requestIdOf(request.headers),
    readBody: () => readWebBody(request),
  };
}

/** A broker answer as a fetch `Response`, with the request's ID. */
export function webResponse(response: BrokerResponse, requestId: string): Response {
  return new Response(response.body, {
    status: response.status,
    headers: { ...response.headers, 'x-request-id': requestId },
  });
}
