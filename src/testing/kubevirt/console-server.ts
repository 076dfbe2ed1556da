import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { type WebSocket, WebSocketServer } from 'ws';
import type { VirtualMachineInstance } from '../../kubevirt-types.js';
import { createRdpGuests } from '../rdp-guest.js';
import { simulatorAnnotations } from './fault-knobs.js';
import { kubevirtResources, mergePatch, unlessNotFound } from './kube-calls.js';
import { keyLabel, renderScreen, type ScreenState } from './rfb-screen.js';
import { createRfbSession, encodeServerCutText, RfbProtocolError } from './rfb-server.js';
import { createUsbredirGuest, UsbredirProtocolError, usbredirPacketLabel } from './usbredir-guest.js';

/** The websocket subprotocol of KubeVirt's console subresources: raw bytes in binary frames. */
export const consoleSubprotocol = 'plain.kubevirt.io';

/** The streaming subresources of a VMI the simulator serves. */
export type ConsoleSubresource = 'vnc' | 'console' | 'usbredir';

/** How many usbredir connections KubeVirt takes per VMI at once (`UsbClientPassthroughMaxNumberOf`). */
export const usbredirSlots = 4;

// A client message never needs more: RFB input is a few bytes, a serial line a few hundred.
const maxClientMessageBytes = 1 << 20;
const keptLabels = 32;

/** Options of {@link createConsoleServer}. */
export interface ConsoleServerOptions {
  kubeConfig: KubeConfig;
  log: (line: string) => void;
}

/** Serves the `vnc`, `console` and `usbredir` websockets of running VMIs, and closes them when their VMI stops. */
export interface ConsoleServer {
  /** Takes an upgrade request for `subresource` of VMI `namespace/name`, already checked to come from the apiserver. */
  upgrade(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: { namespace: string; name: string; subresource: ConsoleSubresource },
  ): Promise<void>;
  /** Closes the consoles of a VMI that no longer runs. */
  vmiChanged(key: string, vmi: VirtualMachineInstance | undefined): void;
  close(): void;
}

function refuseUpgrade(socket: Duplex, code: number, reason: string, message: string): void {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  socket.end(
    `HTTP/1.1 ${code} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Builds the simulator's console server: `vnc` speaks RFB 3.8 (no authentication) with a 320×200 screen that
 * shows the VM's name, the last key pressed and the pointer; `console` echoes every byte back, as a serial line
 * with a shell in echo mode would. The keys pressed on a VNC console are recorded on the VMI's
 * {@link simulatorAnnotations.vncKeys} annotation, the text a client puts on the clipboard on
 * {@link simulatorAnnotations.vncClipboard}; the guest copies the text of {@link simulatorAnnotations.vncCopy}.
 */
export function createConsoleServer(options: ConsoleServerOptions): ConsoleServer {
  const { log } = options;
  const api = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: maxClientMessageBytes,
    handleProtocols: (offered) => (offered.has(consoleSubprotocol) ? consoleSubprotocol : false),
  });
  const open = new Map<string, Set<WebSocket>>();
  const usbredirOpen = new Map<string, number>();
  const records = new Map<string, { labels: string[]; writing: Promise<void> }>();
  // what each VMI's guest copied, as last sent to its VNC clients
  const copied = new Map<string, string>();
  const vncOpen = new Map<string, Set<WebSocket>>();
  // the guest's RDP server, for a VMI whose knob asks for one
  const rdpGuests = createRdpGuests({ kubeConfig: options.kubeConfig, log });

  // One annotation write at a time per VMI and annotation, each with the newest labels: a burst costs a few writes.
  function record(annotation: string, namespace: string, name: string, added: string[]): void {
    const key = `${annotation} ${namespace}/${name}`;
    const entry = records.get(key) ?? { labels: [], writing: Promise.resolve() };
    records.set(key, entry);
    entry.labels = [...entry.labels, ...added].slice(-keptLabels);
    entry.writing = entry.writing.then(async () => {
      const value = entry.labels.join(' ');
      const body = { metadata: { annotations: { [annotation]: value } } };
      await api
        .patchNamespacedCustomObject({ ...kubevirtResources.vmi, namespace, name, body }, mergePatch)
        .catch((error: unknown) =>
          log(`${namespace}/${name}: writing ${annotation} failed: ${(error as Error).message}`),
        );
    });
  }

  function writeClipboard(namespace: string, name: string, text: string): void {
    const body = { metadata: { annotations: { [simulatorAnnotations.vncClipboard]: text } } };
    void api
      .patchNamespacedCustomObject({ ...kubevirtResources.vmi, namespace, name, body }, mergePatch)
      .catch((error: unknown) =>
        log(`${namespace}/${name}: writing the clipboard failed: ${(error as Error).message}`),
      );
  }

  function serveVnc(socket: WebSocket, namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const state: ScreenState = { name };
    const clients = vncOpen.get(key) ?? new Set();
    vncOpen.set(key, clients);
    socket.once('close', () => {
      clients.delete(socket);
      if (clients.size === 0) vncOpen.delete(key);
    });
    const session = createRfbSession({
      name,
      screen: () => renderScreen(state),
      onInput: (input) => {
        if (input.kind === 'cut-text') {
          writeClipboard(namespace, name, input.text);
          return;
        }
        if (input.kind === 'key') {
          if (!input.down) return;
          state.lastKeysym = input.keysym;
          record(simulatorAnnotations.vncKeys, namespace, name, [keyLabel(input.keysym)]);
        } else {
          state.pointer = { x: input.x, y: input.y };
        }
        for (const update of session.changed()) socket.send(update);
      },
    });
    socket.send(session.greeting());
    socket.on('message', (data: Buffer) => {
      try {
        const wasNormal = session.isNormal();
        for (const reply of session.receive(data)) socket.send(reply);
        // the guest's copy reaches a client once its handshake is over, as a real server's would
        if (!wasNormal && session.isNormal()) {
          clients.add(socket);
          const text = copied.get(key);
          if (text !== undefined) socket.send(encodeServerCutText(text));
        }
      } catch (error) {
        if (!(error instanceof RfbProtocolError)) throw error;
        log(`vnc ${namespace}/${name}: ${error.message}`);
        socket.close(1002, error.message.slice(0, 120));
      }
    });
  }

  function serveSerial(socket: WebSocket, name: string): void {
    socket.send(Buffer.from(`\r\n${name} serial console (echo)\r\n`, 'utf8'));
    socket.on('message', (data: Buffer) => socket.send(data));
  }

  function releaseUsbredirSlot(key: string): void {
    const left = (usbredirOpen.get(key) ?? 1) - 1;
    if (left > 0) usbredirOpen.set(key, left);
    else usbredirOpen.delete(key);
  }

  function serveUsbredir(socket: WebSocket, namespace: string, name: string): void {
    const guest = createUsbredirGuest();
    socket.send(guest.greeting());
    socket.on('message', (data: Buffer) => {
      try {
        const { packets, replies } = guest.receive(data);
        if (packets.length > 0)
          record(simulatorAnnotations.usbredirPackets, namespace, name, packets.map(usbredirPacketLabel));
        for (const reply of replies) socket.send(reply);
      } catch (error) {
        if (!(error instanceof UsbredirProtocolError)) throw error;
        log(`usbredir ${namespace}/${name}: ${error.message}`);
        socket.close(1002, error.message.slice(0, 120));
      }
    });
  }

  return {
    async upgrade(request, socket, head, { namespace, name, subresource }) {
      const vmi = (await unlessNotFound(
        api.getNamespacedCustomObject({ ...kubevirtResources.vmi, namespace, name }),
      )) as VirtualMachineInstance | undefined;
      if (!vmi) {
        refuseUpgrade(socket, 404, 'NotFound', `virtualmachineinstance.kubevirt.io "${name}" not found`);
        return;
      }
      const key = `${namespace}/${name}`;
      if (subresource === 'usbredir') {
        const refusal = usbredirRefusal(vmi, usbredirOpen.get(key) ?? 0);
        if (refusal) {
          refuseUpgrade(socket, refusal.code, refusal.reason, refusal.message);
          return;
        }
      } else if (vmi.status?.phase !== 'Running') {
        refuseUpgrade(
          socket,
          400,
          'BadRequest',
          `Unable to connect to VirtualMachineInstance because phase is ${vmi.status?.phase ?? 'unknown'} instead of Running`,
        );
        return;
      }
      // Without verifyClient, handleUpgrade calls back at once: no other upgrade can take a slot after the check.
      sockets.handleUpgrade(request, socket, head, (ws) => {
        if (subresource === 'usbredir') usbredirOpen.set(key, (usbredirOpen.get(key) ?? 0) + 1);
        const set = open.get(key) ?? new Set();
        open.set(key, set);
        set.add(ws);
        ws.on('error', () => ws.terminate());
        ws.once('close', () => {
          set.delete(ws);
          if (set.size === 0) open.delete(key);
          if (subresource === 'usbredir') releaseUsbredirSlot(key);
        });
        if (subresource === 'vnc') serveVnc(ws, namespace, name);
        else if (subresource === 'usbredir') serveUsbredir(ws, namespace, name);
        else serveSerial(ws, name);
      });
    },
    vmiChanged(key, vmi) {
      const copy = vmi?.metadata.annotations?.[simulatorAnnotations.vncCopy];
      if (copy !== undefined && copy !== copied.get(key)) {
        copied.set(key, copy);
        for (const ws of vncOpen.get(key) ?? []) ws.send(encodeServerCutText(copy));
      }
      rdpGuests.vmiChanged(key, vmi);
      if (vmi?.status?.phase === 'Running') return;
      copied.delete(key);
      for (const ws of open.get(key) ?? []) ws.close(1000, 'the VirtualMachineInstance stopped');
    },
    close() {
      for (const set of open.values()) for (const ws of set) ws.terminate();
      sockets.close();
      void rdpGuests.stopAll();
    },
  };
}

/**
 * virt-api's refusals of a usbredir connection, in its order: no USB on s390x, no `clientPassthrough`, not
 * running, and (from virt-handler, passed on as an internal error) every slot of the VMI taken.
 */
function usbredirRefusal(
  vmi: VirtualMachineInstance,
  open: number,
): { code: number; reason: string; message: string } | undefined {
  const conflict = (why: string) => ({
    code: 409,
    reason: 'Conflict',
    message: `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "${vmi.metadata.name}": ${why}`,
  });
  if (vmi.spec?.architecture === 's390x') return conflict('No USB support on s390x');
  if (!vmi.spec?.domain?.devices?.clientPassthrough) return conflict('Not configured with USB Redirection');
  if (vmi.status?.phase !== 'Running')
    return { code: 400, reason: 'BadRequest', message: 'VMI is not running' };
  if (open >= usbredirSlots)
    return {
      code: 500,
      reason: 'InternalError',
      message: "Internal error occurred: Can't connect to websocket (503): websocket: bad handshake",
    };
  return undefined;
}

/** Whether an upgrade request came through the apiserver's front proxy (a client certificate of its CA). */
export function isFromFrontProxy(request: IncomingMessage): boolean {
  return (
    (request.socket as TLSSocket).authorized === true && typeof request.headers['x-remote-user'] === 'string'
  );
}
