// The console relays of `broker serve` against a direct connection to the same guest, from guest to browser:
// - rdp: a guest in a process of its own at the VMI's address:3389 that answers the X.224 request and TLS, then
//   streams BENCH_RELAY_BYTES (64 MB) when asked; through the broker's RDCleanPath endpoint (the broker does the
//   TLS), and directly (the client does the X.224 exchange and TLS itself).
// - vnc: the simulator's RFB server, asked for BENCH_RELAY_FRAMES (200) full 320×200 frames at once; through the
//   broker's vnc console, and directly through KubeVirt's vnc subresource of the apiserver, which the broker relays.
// The reader only counts bytes, in this process; the guest, the broker and the control plane each run in their own.
// Bytes/s of each, the ratio relay ÷ direct, and the broker's CPU per MB relayed; BENCH_RELAY_REPEATS (5) runs of
// each, alternating, median shown. Run: npx tsup, then npx vitest run -c bench/vitest.config.ts bench/console-relay.bench.ts

import { connect as connectTcp } from 'node:net';
import { loadavg } from 'node:os';
import { connect as connectTls } from 'node:tls';
import { afterAll, beforeAll, describe, it } from 'vitest';
import WebSocket from 'ws';
import { backendFor } from '../src/context.js';
import { KubeCluster } from '../src/kube/cluster.js';
import { waitFor } from '../src/testing/wait-for.js';
import { createVdi } from '../src/vdi.js';
import {
  createRdCleanPathReader,
  rdCleanPathRequest,
  rdpProtocols,
  x224ConnectionRequest,
} from '../test/support/rdcleanpath-client.js';
import { connectRfb, createByteReader } from '../test/support/rfb-client.js';
import { type BrokerProcess, killBrokerProcesses, startBrokerProcess } from './support/broker-processes.js';
import { type ControlPlaneProcess, startControlPlaneProcess } from './support/control-plane.js';
import { type GuestProcess, startRdpGuestProcess } from './support/guest-process.js';
import { cpuMsOf, sizeFromEnv } from './support/measure.js';
import { createNamespace, seedMembers } from './support/seed.js';

const namespace = 'bench-console-relay';
const rdpBytes = sizeFromEnv('BENCH_RELAY_BYTES', 64_000_000);
const vncFrames = sizeFromEnv('BENCH_RELAY_FRAMES', 200);
const repeats = sizeFromEnv('BENCH_RELAY_REPEATS', 5);
const frameBytes = 16 + 320 * 200 * 4;
const fullFrameRequest = Buffer.from([3, 0, 0, 0, 0, 0, 1, 64, 0, 200]);

let plane: ControlPlaneProcess | undefined;
let broker: BrokerProcess | undefined;
let guest: GuestProcess | undefined;
let member = '';
let ip = '';

interface Run {
  bytesPerSecond: number;
  bytes: number;
  brokerCpuMs: number;
  /** This process's CPU time: the reader's. */
  readerCpuMs: number;
  /** The rdp guest's process (the vnc guest runs in the control plane's process, not counted). */
  guestCpuMs: number;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Times `receive` (which reads `bytes`), with the CPU the broker, the reader and the rdp guest spent over it. */
async function timed(bytes: number, receive: () => Promise<void>): Promise<Run> {
  const before = { broker: cpuMsOf(broker?.child.pid), reader: ownCpuMs(), guest: cpuMsOf(guest?.pid) };
  const started = performance.now();
  await receive();
  const seconds = (performance.now() - started) / 1000;
  return {
    bytesPerSecond: bytes / seconds,
    bytes,
    brokerCpuMs: cpuMsOf(broker?.child.pid) - before.broker,
    readerCpuMs: ownCpuMs() - before.reader,
    guestCpuMs: cpuMsOf(guest?.pid) - before.guest,
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

/** Reads `bytes` from a stream of chunks, counting only. */
function counter(bytes: number): { add(length: number): void; done: Promise<void> } {
  let left = bytes;
  let finish = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    add(length) {
      left -= length;
      if (left <= 0) finish();
    },
    done,
  };
}

async function rdpThroughBroker(): Promise<Run> {
  if (!broker) throw new Error('no broker');
  const headers = { 'x-forwarded-user': 'alice' };
  const tokenAnswer = await fetch(
    `${broker.url}/api/vdi/desktops/vm/${namespace}/${member}/console/rdp/token`,
    {
      method: 'POST',
      headers,
    },
  );
  const { token, destination } = (await tokenAnswer.json()) as { token: string; destination: string };
  const socket = new WebSocket(
    `${broker.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/rdp`,
    {
      headers,
      perMessageDeflate: false,
    },
  );
  const reader = createRdCleanPathReader(socket);
  await opened(socket);
  socket.send(rdCleanPathRequest(token, destination));
  const answer = await reader.pdu();
  if (!answer || answer.error) throw new Error(`the broker refused: ${JSON.stringify(answer?.error)}`);
  socket.removeAllListeners('message');
  const received = counter(rdpBytes);
  socket.on('message', (data: Buffer) => received.add(data.length));
  const run = await timed(rdpBytes, async () => {
    socket.send(asked(rdpBytes));
    await received.done;
  });
  socket.close();
  return run;
}

async function rdpDirect(): Promise<Run> {
  const tcp = connectTcp({ host: ip, port: 3389, noDelay: true });
  await new Promise((resolve) => tcp.once('connect', resolve));
  tcp.write(x224ConnectionRequest(rdpProtocols.ssl));
  await new Promise((resolve) => tcp.once('data', resolve));
  const tls = connectTls({ socket: tcp, rejectUnauthorized: false });
  await new Promise((resolve) => tls.once('secureConnect', resolve));
  const received = counter(rdpBytes);
  tls.on('data', (data: Buffer) => received.add(data.length));
  const run = await timed(rdpBytes, async () => {
    tls.write(asked(rdpBytes));
    await received.done;
  });
  tls.destroy();
  return run;
}

/**
 * Asks an RFB console for `vncFrames` full frames at once and counts their bytes; `read` is the socket's byte
 * reader, made before the server could speak.
 */
async function framesOver(socket: WebSocket, read: (length: number) => Promise<Buffer>): Promise<Run> {
  const rfb = await connectRfb(socket, read);
  await rfb.requestFrame();
  // from here on only counted: the byte reader would copy what it holds at every message
  socket.removeAllListeners('message');
  const bytes = vncFrames * frameBytes;
  const received = counter(bytes);
  socket.on('message', (data: Buffer) => received.add(data.length));
  return await timed(bytes, async () => {
    for (let index = 0; index < vncFrames; index += 1) socket.send(fullFrameRequest);
    await received.done;
  });
}

async function vncThroughBroker(): Promise<Run> {
  if (!broker) throw new Error('no broker');
  const socket = new WebSocket(
    `${broker.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`,
    {
      headers: { 'X-Forwarded-User': 'alice' },
      perMessageDeflate: false,
    },
  );
  // listening before the open: the guest's greeting may come in the same read as the upgrade's answer
  const read = createByteReader(socket);
  await opened(socket);
  const run = await framesOver(socket, read);
  socket.close();
  return run;
}

async function vncDirect(): Promise<Run> {
  if (!plane) throw new Error('no control plane');
  const vdi = createVdi({ kubeConfig: plane.access.kubeConfig, namespace });
  const socket = (await backendFor(vdi.context, 'vm').openConsoleStream({ namespace, member }, 'vnc', {
    maxPayload: 1 << 20,
  })) as WebSocket;
  // the SDK's stream holds its messages until someone listens
  const run = await framesOver(socket, createByteReader(socket));
  socket.close();
  return { ...run, brokerCpuMs: 0 };
}

beforeAll(async () => {
  plane = await startControlPlaneProcess();
  const { kubeConfig, kubeconfigPath } = plane.access;
  const kube = new KubeCluster(kubeConfig);
  await createNamespace(kubeConfig, namespace);
  [member = ''] = await seedMembers(kube, namespace, 'devpool', 1);
  await waitFor(() => kube.getVm(namespace, member), {
    describe: `${member} to show Stopped`,
    until: (vm) => vm?.status?.printableStatus === 'Stopped',
  });
  broker = await startBrokerProcess(kubeconfigPath, namespace);
  const claim = await fetch(`${broker.url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
    method: 'POST',
    headers: { 'x-forwarded-user': 'alice' },
  });
  if (claim.status !== 200) throw new Error(`the claim answered ${claim.status}: ${await claim.text()}`);
  const vmi = await waitFor(() => kube.getVmi(namespace, member), {
    describe: `the VMI of ${member} to run with an address`,
    until: (found) => found?.status?.phase === 'Running' && !!found.status.interfaces?.[0]?.ipAddress,
    timeoutMs: 120_000,
  });
  ip = vmi?.status?.interfaces?.[0]?.ipAddress ?? '';
  guest = await startRdpGuestProcess(ip);
}, 900_000);

afterAll(async () => {
  await guest?.stop();
  if (broker) await killBrokerProcesses([broker]);
  await plane?.stop();
});

describe('console relay', () => {
  it('moves guest bytes through the rdp and vnc relays about as fast as a direct connection', async () => {
    const cases = { rdpDirect, rdpThroughBroker, vncDirect, vncThroughBroker };
    const runs = new Map<string, Run[]>(Object.keys(cases).map((name) => [name, []]));
    for (let round = 0; round < repeats; round += 1) {
      const order = Object.entries(cases);
      for (const [name, measure] of round % 2 === 0 ? order : order.reverse()) {
        const run = await measure();
        process.stderr.write(`console relay: ${name} ${(run.bytesPerSecond / 1e6).toFixed(1)} MB/s\n`);
        runs.get(name)?.push(run);
      }
    }
    const figures = (name: string) => {
      const each = runs.get(name) ?? [];
      const perMb = (cpuMs: (run: Run) => number) =>
        median(each.map((run) => cpuMs(run) / (run.bytes / 1e6)));
      return {
        bytesPerSecond: median(each.map((run) => run.bytesPerSecond)),
        brokerCpuPerMb: perMb((run) => run.brokerCpuMs),
        pathCpuPerMb: perMb((run) => run.brokerCpuMs + run.readerCpuMs + run.guestCpuMs),
      };
    };
    const mb = (bytesPerSecond: number) => (bytesPerSecond / 1e6).toFixed(1);
    const [load] = loadavg();
    for (const protocol of ['rdp', 'vnc']) {
      const direct = figures(`${protocol}Direct`);
      const relayed = figures(`${protocol}ThroughBroker`);
      // the vnc guest shares the control plane's process, whose CPU is not counted: no path figure for vnc
      const path =
        protocol === 'rdp'
          ? `; guest, broker and reader CPU ${direct.pathCpuPerMb.toFixed(1)} ms per MB direct, ${relayed.pathCpuPerMb.toFixed(1)} relayed`
          : '';
      console.info(
        `console relay ${protocol}, median of ${repeats}: direct ${mb(direct.bytesPerSecond)} MB/s, through broker serve ` +
          `${mb(relayed.bytesPerSecond)} MB/s (ratio ${(relayed.bytesPerSecond / direct.bytesPerSecond).toFixed(2)}), ` +
          `broker CPU ${relayed.brokerCpuPerMb.toFixed(1)} ms per MB${path}; load average ${load?.toFixed(1)}`,
      );
    }
  });
});
