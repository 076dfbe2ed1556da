// The console-relay bench's reader in a process of its own, as a browser is: for each job read from its standard
// input (one JSON line naming the case), it opens the console and does its handshake, prints `ready`, waits for
// `go`, then asks for the bytes, counts them as they come, and prints how long that took and its own CPU time.
// Started with one JSON argument: the broker's URL, the desktop, the guest's address, the kubeconfig and the sizes.
import { connect as connectTcp } from 'node:net';
import { createInterface } from 'node:readline';
import { connect as connectTls } from 'node:tls';
import WebSocket from 'ws';
import { backendFor } from '../../src/context.js';
import { loadKubeConfig } from '../../src/kube/load-kube-config.js';
import { createVdi } from '../../src/vdi.js';
import {
  createRdCleanPathReader,
  rdCleanPathRequest,
  rdpProtocols,
  x224ConnectionRequest,
} from '../../test/support/rdcleanpath-client.js';
import { connectRfb, createByteReader } from '../../test/support/rfb-client.js';
import type { ReaderJob, ReaderRun, ReaderSetting } from './relay-reader.js';

const setting = JSON.parse(process.argv[2] ?? '{}') as ReaderSetting;
const frameBytes = 16 + 320 * 200 * 4;
const fullFrameRequest = Buffer.from([3, 0, 0, 0, 0, 0, 1, 64, 0, 200]);
const lines = createInterface({ input: process.stdin });
// the bench ends the reader by closing its standard input
lines.once('close', () => process.exit(0));
const nextLine = () => new Promise<string>((resolve) => lines.once('line', resolve));

/** A prepared console: `receive` asks for the bytes and resolves once they all came; `close` ends it. */
interface Prepared {
  bytes: number;
  receive(): Promise<Arrival>;
  close(): void;
}

/** When the first chunk came and how large it was, and when the last byte came. */
interface Arrival {
  firstAt: number;
  firstBytes: number;
  lastAt: number;
}

/** Counts `bytes` from chunks of any size. */
function counter(bytes: number): { add(length: number): void; done: Promise<Arrival> } {
  let left = bytes;
  let first: { at: number; bytes: number } | undefined;
  let finish = (_: Arrival) => {};
  const done = new Promise<Arrival>((resolve) => {
    finish = resolve;
  });
  return {
    add(length) {
      const now = performance.now();
      first ??= { at: now, bytes: length };
      left -= length;
      if (left <= 0) finish({ firstAt: first.at, firstBytes: first.bytes, lastAt: now });
    },
    done,
  };
}

const asked = (bytes: number) => {
  const count = Buffer.alloc(4);
  count.writeUInt32BE(bytes);
  return count;
};

function opened(socket: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_, response) =>
      reject(new Error(`the broker refused the console: HTTP ${response.statusCode}`)),
    );
    socket.once('error', reject);
  });
}

const consoleUrl = (protocol: string) =>
  `${setting.brokerUrl.replace('http', 'ws')}/api/vdi/desktops/vm/${setting.namespace}/${setting.member}/console/${protocol}`;
const login = { 'x-forwarded-user': 'alice' };

async function rdpThroughBroker(): Promise<Prepared> {
  const tokenAnswer = await fetch(
    `${setting.brokerUrl}/api/vdi/desktops/vm/${setting.namespace}/${setting.member}/console/rdp/token`,
    { method: 'POST', headers: login },
  );
  const { token, destination } = (await tokenAnswer.json()) as { token: string; destination: string };
  const socket = new WebSocket(consoleUrl('rdp'), { headers: login, perMessageDeflate: false });
  const reader = createRdCleanPathReader(socket);
  await opened(socket);
  socket.send(rdCleanPathRequest(token, destination));
  const answer = await reader.pdu();
  if (!answer || answer.error) throw new Error(`the broker refused: ${JSON.stringify(answer?.error)}`);
  socket.removeAllListeners('message');
  const received = counter(setting.rdpBytes);
  socket.on('message', (data: Buffer) => received.add(data.length));
  return {
    bytes: setting.rdpBytes,
    async receive() {
      socket.send(asked(setting.rdpBytes));
      return await received.done;
    },
    close: () => socket.close(),
  };
}

async function rdpDirect(): Promise<Prepared> {
  const tcp = connectTcp({ host: setting.ip, port: 3389, noDelay: true });
  await new Promise((resolve) => tcp.once('connect', resolve));
  tcp.write(x224ConnectionRequest(rdpProtocols.ssl));
  await new Promise((resolve) => tcp.once('data', resolve));
  const tls = connectTls({ socket: tcp, rejectUnauthorized: false });
  await new Promise((resolve) => tls.once('secureConnect', resolve));
  const received = counter(setting.rdpBytes);
  tls.on('data', (data: Buffer) => received.add(data.length));
  return {
    bytes: setting.rdpBytes,
    async receive() {
      tls.write(asked(setting.rdpBytes));
      return await received.done;
    },
    close: () => tls.destroy(),
  };
}

/** Asks an RFB console for the frames at once and counts their bytes; `read` was made before the server spoke. */
async function frames(socket: WebSocket, read: (length: number) => Promise<Buffer>): Promise<Prepared> {
  const rfb = await connectRfb(socket, read);
  await rfb.requestFrame();
  // from here on only counted: the byte reader would copy what it holds at every message
  socket.removeAllListeners('message');
  const bytes = setting.vncFrames * frameBytes;
  const received = counter(bytes);
  socket.on('message', (data: Buffer) => received.add(data.length));
  return {
    bytes,
    async receive() {
      for (let index = 0; index < setting.vncFrames; index += 1) socket.send(fullFrameRequest);
      return await received.done;
    },
    close: () => socket.close(),
  };
}

async function vncThroughBroker(): Promise<Prepared> {
  const socket = new WebSocket(consoleUrl('vnc'), { headers: login, perMessageDeflate: false });
  // listening before the open: the guest's greeting may come in the same read as the upgrade's answer
  const read = createByteReader(socket);
  await opened(socket);
  return await frames(socket, read);
}

const vdi = createVdi({
  kubeConfig: loadKubeConfig({ kubeconfig: setting.kubeconfigPath }, {}),
  namespace: setting.namespace,
});

async function vncDirect(): Promise<Prepared> {
  const socket = (await backendFor(vdi.context, 'vm').openConsoleStream(
    { namespace: setting.namespace, member: setting.member },
    'vnc',
    { maxPayload: 1 << 20 },
  )) as WebSocket;
  // the SDK's stream holds its messages until someone listens
  return await frames(socket, createByteReader(socket));
}

const cases: Record<ReaderJob, () => Promise<Prepared>> = {
  rdpDirect,
  rdpThroughBroker,
  vncDirect,
  vncThroughBroker,
};

process.stdout.write('started\n');
for (;;) {
  const job = (await nextLine()) as ReaderJob;
  const prepared = await cases[job]();
  process.stdout.write('ready\n');
  await nextLine();
  const cpu = process.cpuUsage();
  const asked = performance.now();
  const arrival = await prepared.receive();
  const { user, system } = process.cpuUsage(cpu);
  prepared.close();
  const run: ReaderRun = {
    firstByteMs: arrival.firstAt - asked,
    // the stream's rate, from its first chunk to its last byte: the ask's way there is latency, not throughput
    seconds: (arrival.lastAt - arrival.firstAt) / 1000,
    streamedBytes: prepared.bytes - arrival.firstBytes,
    bytes: prepared.bytes,
    cpuMs: (user + system) / 1000,
  };
  process.stdout.write(`${JSON.stringify(run)}\n`);
}
