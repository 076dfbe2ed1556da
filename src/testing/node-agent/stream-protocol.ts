import type { WebSocket } from 'ws';
import type { TerminalSize } from './local-process.js';

/**
 * The channels of the Kubernetes websocket stream protocol: each binary frame starts with one of them. `close`
 * (`v5` only) carries the channel whose sending side the client closed, as one byte.
 */
export const streamChannel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

/**
 * The subprotocols served, best first: `v5` is `v4` plus the close message, with which a client ends its input
 * and keeps reading; `v4` reports the end as a JSON Status, the first version as plain text.
 */
export const servedStreamProtocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io'] as const;

/** Whether the negotiated subprotocol reports the end as a JSON Status (`v4` and `v5`). */
function endsWithStatus(protocol: string): boolean {
  return protocol === 'v5.channel.k8s.io' || protocol === 'v4.channel.k8s.io';
}

/** The served subprotocol a client asks for first, or undefined when it asks only for others. */
export function chooseStreamProtocol(offered: Iterable<string>): string | undefined {
  for (const protocol of offered)
    if ((servedStreamProtocols as readonly string[]).includes(protocol)) return protocol;
  return undefined;
}

/** How a stream ended, as the kubelet reports it on the error channel. */
export type StreamEnd =
  | { kind: 'success' }
  | { kind: 'exit-code'; exitCode: number }
  | { kind: 'internal-error'; message: string };

/** The Status a kubelet sends on the error channel for `end` (`v4.channel.k8s.io` and `v5`). */
export function endStatus(end: StreamEnd): Record<string, unknown> {
  switch (end.kind) {
    case 'success':
      return { metadata: {}, status: 'Success' };
    case 'exit-code':
      return {
        metadata: {},
        status: 'Failure',
        message: `command terminated with non-zero exit code: exit status ${end.exitCode}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(end.exitCode) }] },
      };
    case 'internal-error':
      return {
        metadata: {},
        status: 'Failure',
        message: `Internal error occurred: ${end.message}`,
        reason: 'InternalError',
        details: { causes: [{ message: end.message }] },
        code: 500,
      };
  }
}

/** Sends one frame on `channel`. */
export function sendFrame(socket: WebSocket, channel: number, data: Buffer): void {
  socket.send(Buffer.concat([Buffer.from([channel]), data]));
}

/** Sends how the stream ended, in the negotiated protocol's form, and closes the socket. */
export function sendEnd(socket: WebSocket, end: StreamEnd): void {
  if (endsWithStatus(socket.protocol)) {
    sendFrame(socket, streamChannel.error, Buffer.from(JSON.stringify(endStatus(end))));
  } else if (end.kind !== 'success') {
    // The first protocol version carries only failures, as their message.
    const status = endStatus(end);
    sendFrame(socket, streamChannel.error, Buffer.from(String(status.message)));
  }
  socket.close(1000);
}

/** Reads a resize frame; field names in any case, as Go's JSON decoding accepts (client-node sends `width`). */
export function readTerminalSize(payload: Buffer): TerminalSize | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const fields = new Map(Object.entries(parsed).map(([key, value]) => [key.toLowerCase(), value]));
  const width = fields.get('width');
  const height = fields.get('height');
  if (typeof width !== 'number' || typeof height !== 'number' || width < 1 || height < 1) return undefined;
  return { Width: width, Height: height };
}
