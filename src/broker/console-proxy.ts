import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { canOpenConsole } from '../claims/access.js';
import { readMemberAs } from '../claims/read-held-member.js';
import { backendFor, type VdiContext } from '../context.js';
import type { ConsoleStream, DesktopKind, MemberConsole } from '../desktop-backend.js';
import { checkHolderEntitlement } from '../entitlements/pool-entitlement.js';
import { VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { planConsoleStream } from '../sessions/plan-console-stream.js';
import type { ConsoleEnd, ConsoleHandle, ConsoleKind, SessionEngine } from '../sessions/session-engine.js';
import { answerError, answerFailure } from './answers.js';
import type { Caller } from './caller-access.js';
import { createConsoleInputDetector } from './console-input.js';
import { type ConsoleRelay, closeCodeOf, type RelayStats, relayConsole } from './console-relay.js';
import type { BrokerResponse } from './http-io.js';
import { consumeRdpToken, type RdpTarget, resolveRdpTarget } from './rdp-access.js';
import { runRdpConsole } from './rdp-console.js';
import { terminalFraming } from './terminal-framing.js';

/**
 * The bounds of the broker's console websockets. @category broker
 */
export interface ConsoleLimits {
  /** The largest websocket message taken from either side; a larger one closes that console with 1009. */
  maxMessageBytes: number;
  /** Reading from one side pauses while the other side has more than this many bytes queued. */
  highWaterBytes: number;
  /**
   * How long each step of an RDP console's start may take: the browser's RDCleanPath request, the TCP connect to
   * the guest, its X.224 confirm and the TLS handshake with it.
   */
  rdpHandshakeTimeoutMs: number;
}

/**
 * The default {@link ConsoleLimits}: 1 MiB messages, 1 MiB queued per direction, 10 s per step of an RDP start.
 * @category broker
 */
export const defaultConsoleLimits: ConsoleLimits = {
  maxMessageBytes: 1 << 20,
  highWaterBytes: 1 << 20,
  rdpHandshakeTimeoutMs: 10_000,
};

/** One console websocket open through the broker. @category broker */
export interface OpenConsole extends RelayStats {
  desktopId: string;
  protocol: ConsoleKind;
  /** Who opened it. */
  identity: string;
  /** When it opened (RFC 3339), by the SDK's clock. */
  openedAt: string;
}

/** Which console an admitted upgrade opens, and for whom. */
export interface ConsoleTarget {
  kind: DesktopKind;
  namespace: string;
  member: string;
  protocol: ConsoleKind;
  caller: Caller;
}

/** The console websockets of one broker. */
export interface ConsoleProxy {
  /** Checks the caller's access and the desktop, counts the console, opens the desktop's side, then upgrades. */
  open(request: IncomingMessage, socket: Duplex, head: Buffer, target: ConsoleTarget): Promise<void>;
  list(): OpenConsole[];
  /** Closes every open console with 1001 and waits for them to end (at most a few seconds). */
  closeAll(): Promise<void>;
}

/** What the console proxy needs of its broker. */
export interface ConsoleProxyOptions {
  ctx: VdiContext;
  sessions: SessionEngine;
  limits: ConsoleLimits;
  log: (message: string) => void;
}

// The subprotocols a browser client may ask for; noVNC asks for `binary` or none.
const clientProtocols = ['binary', 'plain.kubevirt.io'];
// How long a closing console may take before its sockets are cut.
const closeGraceMs = 2_000;

/** Writes an error answer on a socket that was never upgraded, and closes it. */
export function refuseUpgrade(socket: Duplex, response: BrokerResponse): void {
  if (socket.destroyed) return;
  const headers = { ...response.headers, 'content-length': String(Buffer.byteLength(response.body)) };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(
    `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}\r\n${lines.join('')}connection: close\r\n\r\n${response.body}`,
  );
}

// ws refuses these without calling back; checking first lets nothing be opened for a request it would drop.
function checkHandshake(request: IncomingMessage): string | undefined {
  if (request.headers.upgrade?.toLowerCase() !== 'websocket')
    return 'This route opens a console websocket; send Upgrade: websocket.';
  if (!/^[+/0-9A-Za-z]{22}==$/.test(request.headers['sec-websocket-key'] ?? ''))
    return 'The Sec-WebSocket-Key header is missing or malformed.';
  if (!['8', '13'].includes(request.headers['sec-websocket-version'] ?? ''))
    return 'Only websocket version 13 is served.';
  return undefined;
}

/** Builds the console websockets of a broker. */
export function createConsoleProxy(options: ConsoleProxyOptions): ConsoleProxy {
  const { ctx, sessions, limits, log } = options;
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    perMessageDeflate: false,
    handleProtocols: (offered) => clientProtocols.find((protocol) => offered.has(protocol)) ?? false,
  });
  const open = new Set<{ info: Omit<OpenConsole, keyof RelayStats>; relay: ConsoleRelay }>();

  // Counts the console and opens the desktop's side; throws the refusal to answer.
  async function prepare(
    target: ConsoleTarget & { protocol: MemberConsole },
  ): Promise<{ handle: ConsoleHandle; stream: ConsoleStream }> {
    const { kind, namespace, member, protocol, caller } = target;
    const backend = backendFor(ctx, kind);
    const { facts, marks, lease } = await readMemberAs(ctx, backend, {
      namespace,
      member,
      identity: caller.login,
      isAdmin: caller.admin,
      decide: (request) => canOpenConsole({ ...request, doing: `open the ${protocol} console of` }),
    });
    const desktopId = formatDesktopId({ kind, namespace, member });
    if (facts) {
      const asker = { identity: caller.login, groups: caller.groups, isAdmin: caller.admin };
      await checkHolderEntitlement(ctx, { kind, namespace, pool: facts.pool, ...asker, lease });
    }
    // a member gone under its claim reads as resetting: not running, so the planner refuses it as stopped
    const consoles = facts?.consoles ?? [];
    const plan = planConsoleStream({ desktopId, kind, power: marks.power, consoles }, protocol);
    if (plan.kind === 'reject') throw new VdiError(plan.code, plan.message, { details: { desktopId } });
    const handle = await sessions.openConsole({ member, namespace, identity: caller.login, kind: protocol });
    try {
      const stream = await backend.openConsoleStream({ namespace, member }, protocol, {
        maxPayload: limits.maxMessageBytes,
      });
      return { handle, stream };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  function relay(
    client: WebSocket,
    stream: ConsoleStream,
    handle: ConsoleHandle,
    target: ConsoleTarget & { protocol: MemberConsole },
  ): void {
    // the exec stream has channel bytes; the browser gets plain bytes, as for serial
    const running = relayConsole(
      client,
      stream,
      limits,
      target.protocol === 'terminal' ? terminalFraming : undefined,
      // a console whose desktop was released goes down with its member: it closes saying so
      () => {
        const end = handle.ending();
        return end && { code: closeCodeOf(end), reason: end.message };
      },
    );
    const entry = {
      info: {
        // the tracker counts consoles by member; the kind is the route's
        desktopId: formatDesktopId({ kind: target.kind, namespace: target.namespace, member: target.member }),
        protocol: target.protocol,
        identity: target.caller.login,
        openedAt: handle.openedAt.toISOString(),
      },
      relay: running,
    };
    open.add(entry);
    // input keeps the desktop from idle reclaim; the engine writes it to the Lease at most once per interval
    const isInput = createConsoleInputDetector(target.protocol);
    client.on('message', (data: Buffer, isBinary: boolean) => {
      if (isInput(data, isBinary)) sessions.noteInput({ namespace: target.namespace, member: target.member });
    });
    const onEnded = () =>
      running.end(
        closeCodeOf(handle.ended.reason as ConsoleEnd),
        (handle.ended.reason as ConsoleEnd).message,
      );
    handle.ended.addEventListener('abort', onEnded, { once: true });
    void running.done.then(async () => {
      open.delete(entry);
      handle.ended.removeEventListener('abort', onEnded);
      await handle.close();
    });
  }

  // The RDP console: checked before the upgrade as the others; counted once its request's token passed.
  async function openRdp(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: ConsoleTarget,
  ): Promise<void> {
    const { namespace, member, caller } = target;
    let resolved: RdpTarget;
    try {
      resolved = await resolveRdpTarget(ctx, target);
    } catch (error) {
      return refuseUpgrade(
        socket,
        answerError(error, (unexpected) =>
          log(
            `broker: opening the rdp console of ${target.kind}/${namespace}/${member} failed unexpectedly: ${String(unexpected)}`,
          ),
        ),
      );
    }
    if (socket.destroyed) return;
    server.handleUpgrade(request, socket, head, (client) => {
      const running = runRdpConsole(client, {
        clientSocket: socket,
        target: resolved,
        limits: { handshakeTimeoutMs: limits.rdpHandshakeTimeoutMs, highWaterBytes: limits.highWaterBytes },
        consumeToken: (token) => consumeRdpToken(ctx, resolved, caller, token),
        openHandle: () => sessions.openConsole({ member, namespace, identity: caller.login, kind: 'rdp' }),
        noteInput: () => sessions.noteInput({ namespace, member }),
        log,
      });
      const entry = {
        info: {
          desktopId: resolved.desktopId,
          protocol: 'rdp' as const,
          identity: caller.login,
          openedAt: ctx.clock.now().toISOString(),
        },
        relay: running,
      };
      open.add(entry);
      void running.done.then(() => open.delete(entry));
    });
  }

  return {
    async open(request, socket, head, target) {
      socket.on('error', () => socket.destroy());
      const desktopId = formatDesktopId({
        kind: target.kind,
        namespace: target.namespace,
        member: target.member,
      });
      const malformed = checkHandshake(request);
      if (malformed) return refuseUpgrade(socket, answerFailure('INVALID_INPUT', malformed));
      const { protocol } = target;
      if (protocol === 'rdp') return await openRdp(request, socket, head, target);
      let prepared: { handle: ConsoleHandle; stream: ConsoleStream };
      try {
        prepared = await prepare({ ...target, protocol });
      } catch (error) {
        return refuseUpgrade(
          socket,
          answerError(error, (unexpected) =>
            log(
              `broker: opening the ${target.protocol} console of ${desktopId} failed unexpectedly: ${String(unexpected)}`,
            ),
          ),
        );
      }
      const { handle, stream } = prepared;
      let upgraded = false;
      if (!socket.destroyed) {
        server.handleUpgrade(request, socket, head, (client) => {
          upgraded = true;
          relay(client, stream, handle, { ...target, protocol });
        });
      }
      // the browser left while the desktop's side opened: nothing is relayed, nothing stays counted
      if (!upgraded) {
        stream.close(1000, 'The browser left before the console opened.');
        await handle.close();
      }
    },
    list: () => [...open].map(({ info, relay: running }) => ({ ...info, ...running.stats() })),
    async closeAll() {
      const closing = [...open].map(async ({ relay: running }) => {
        running.end(1001, 'The broker is shutting down.');
        let timer: ReturnType<typeof setTimeout> | undefined;
        const cut = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            running.terminate();
            resolve();
          }, closeGraceMs);
        });
        await Promise.race([running.done, cut]);
        clearTimeout(timer);
      });
      await Promise.all(closing);
    },
  };
}
