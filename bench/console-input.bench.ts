// A paste through a vnc console of `broker serve`: a legal ClientCutText of BENCH_PASTE_BYTES (1,000,000) sent on one
// console in 16-byte websocket messages and in 64 KiB messages, then a FramebufferUpdateRequest, whose answer says
// the desktop has read the whole paste. Bytes/s from the first message to that answer, the broker's CPU time, and
// the ratio of the two sizes' bytes/s, from one run; BENCH_PASTE_REPEATS (3) runs per size, alternating, median shown.
// Run: npx vitest run -c bench/vitest.config.ts bench/console-input.bench.ts (npx tsup first: it runs the built CLI)

import { afterAll, beforeAll, describe, it } from 'vitest';
import WebSocket from 'ws';
import { KubeCluster } from '../src/kube/cluster.js';
import { waitFor } from '../src/testing/wait-for.js';
import {
  connectRfb,
  createByteReader,
  pasteMessages,
  type RfbClient,
  sendPaced,
} from '../test/support/rfb-client.js';
import { type BrokerProcess, killBrokerProcesses, startBrokerProcess } from './support/broker-processes.js';
import { type ControlPlaneProcess, startControlPlaneProcess } from './support/control-plane.js';
import { cpuMsOf, sizeFromEnv } from './support/measure.js';
import { createNamespace, seedMembers } from './support/seed.js';

const namespace = 'bench-console-input';
const pasteBytes = sizeFromEnv('BENCH_PASTE_BYTES', 1_000_000);
const repeats = sizeFromEnv('BENCH_PASTE_REPEATS', 3);
const messageSizes = [16, 65_536];

let plane: ControlPlaneProcess | undefined;
let broker: BrokerProcess | undefined;
let socket: WebSocket | undefined;
let rfb: RfbClient | undefined;

async function pasteOnce(size: number): Promise<{ bytesPerSecond: number; brokerCpuMs: number }> {
  if (!socket || !rfb || !broker) throw new Error('the console is not open');
  const messages = pasteMessages(pasteBytes, size);
  const cpuBefore = cpuMsOf(broker.child.pid);
  const started = performance.now();
  await sendPaced(socket, messages, size);
  await rfb.requestFrame();
  const seconds = (performance.now() - started) / 1000;
  return { bytesPerSecond: pasteBytes / seconds, brokerCpuMs: cpuMsOf(broker.child.pid) - cpuBefore };
}

interface PasteFigures {
  size: number;
  bytesPerSecond: number;
  brokerCpuMs: number;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

beforeAll(async () => {
  plane = await startControlPlaneProcess();
  const { kubeConfig, kubeconfigPath } = plane.access;
  const kube = new KubeCluster(kubeConfig);
  await createNamespace(kubeConfig, namespace);
  const [member = ''] = await seedMembers(kube, namespace, 'devpool', 1);
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
  await waitFor(() => kube.getVmi(namespace, member), {
    describe: `the VMI of ${member} to run`,
    until: (vmi) => vmi?.status?.phase === 'Running',
    timeoutMs: 120_000,
  });
  const open = new WebSocket(
    `${broker.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`,
    { headers: { 'X-Forwarded-User': 'alice' }, perMessageDeflate: false },
  );
  socket = open;
  const read = createByteReader(open);
  await new Promise<void>((resolve, reject) => {
    open.once('open', () => resolve());
    open.once('error', reject);
  });
  rfb = await connectRfb(open, read);
  await rfb.requestFrame();
}, 900_000);

afterAll(async () => {
  socket?.terminate();
  if (broker) await killBrokerProcesses([broker]);
  await plane?.stop();
});

describe('console input', () => {
  it('pastes the same bytes in 16-byte and 64 KiB messages', async () => {
    const runs = new Map<number, Array<{ bytesPerSecond: number; brokerCpuMs: number }>>(
      messageSizes.map((size) => [size, []]),
    );
    for (let round = 0; round < repeats; round += 1)
      for (const size of round % 2 === 0 ? messageSizes : [...messageSizes].reverse())
        runs.get(size)?.push(await pasteOnce(size));
    const [tiny, large] = messageSizes.map((size): PasteFigures => {
      const each = runs.get(size) ?? [];
      return {
        size,
        bytesPerSecond: median(each.map((run) => run.bytesPerSecond)),
        brokerCpuMs: median(each.map((run) => run.brokerCpuMs)),
      };
    }) as [PasteFigures, PasteFigures];
    const megabytes = (bytesPerSecond: number) => (bytesPerSecond / 1e6).toFixed(2);
    console.info(
      `console paste of ${pasteBytes} bytes through broker serve, median of ${repeats}: ` +
        `${tiny.size}-byte messages ${megabytes(tiny.bytesPerSecond)} MB/s (broker CPU ${tiny.brokerCpuMs.toFixed(0)} ms), ` +
        `${large.size}-byte messages ${megabytes(large.bytesPerSecond)} MB/s (broker CPU ${large.brokerCpuMs.toFixed(0)} ms); ` +
        `ratio ${(large.bytesPerSecond / tiny.bytesPerSecond).toFixed(1)}× in bytes/s, ` +
        `${(tiny.brokerCpuMs / Math.max(1, large.brokerCpuMs)).toFixed(1)}× in broker CPU`,
    );
  });
});
