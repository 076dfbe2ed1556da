// The console relays of `broker serve` against a direct connection to the same guest, from guest to browser:
// - rdp: a guest in a process of its own at the VMI's address:3389 that answers the X.224 request and TLS, then
//   streams BENCH_RELAY_BYTES (64 MB) when asked; through the broker's RDCleanPath endpoint (the broker does the
//   TLS), and directly (the client does the X.224 exchange and TLS itself).
// - vnc: the simulator's RFB server, asked for BENCH_RELAY_FRAMES (200) full 320×200 frames at once; through the
//   broker's vnc console, and directly through KubeVirt's vnc subresource of the apiserver, which the broker relays.
// The reader, standing in for the browser, runs in a process of its own and only counts bytes; the guest, the broker
// and the control plane each run in their own too. Bytes/s of each from its first chunk to its last byte (the ask's
// way to the guest is latency, shown apart as the time to the first byte, and with it the bytes/s from the ask), the
// ratio relay ÷ direct, and the CPU per MB of the broker, the reader and the rdp guest; BENCH_RELAY_REPEATS (5) runs
// of each, alternating, median shown.
// Run: npx tsup, then npx vitest run -c bench/vitest.config.ts bench/console-relay.bench.ts

import { loadavg } from 'node:os';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { KubeCluster } from '../src/kube/cluster.js';
import { waitFor } from '../src/testing/wait-for.js';
import { type BrokerProcess, killBrokerProcesses, startBrokerProcess } from './support/broker-processes.js';
import { type ControlPlaneProcess, startControlPlaneProcess } from './support/control-plane.js';
import { type GuestProcess, startRdpGuestProcess } from './support/guest-process.js';
import { cpuMsOf, sizeFromEnv } from './support/measure.js';
import { type ReaderJob, type ReaderProcess, startReaderProcess } from './support/relay-reader.js';
import { createNamespace, seedMembers } from './support/seed.js';

const namespace = 'bench-console-relay';
const rdpBytes = sizeFromEnv('BENCH_RELAY_BYTES', 64_000_000);
const vncFrames = sizeFromEnv('BENCH_RELAY_FRAMES', 200);
const repeats = sizeFromEnv('BENCH_RELAY_REPEATS', 5);
// the young generation deploy/ gives the broker (NODE_OPTIONS); BENCH_RELAY_NODE_ARGS='' runs Node's default
const brokerNodeArgs = (process.env.BENCH_RELAY_NODE_ARGS ?? '--max-semi-space-size=8')
  .split(' ')
  .filter(Boolean);

let plane: ControlPlaneProcess | undefined;
let broker: BrokerProcess | undefined;
let guest: GuestProcess | undefined;
let reader: ReaderProcess | undefined;

interface Run {
  /** From the first chunk to the last byte. */
  bytesPerSecond: number;
  firstByteMs: number;
  /** From the ask to the last byte. */
  askedBytesPerSecond: number;
  bytes: number;
  brokerCpuMs: number;
  readerCpuMs: number;
  /** The rdp guest's process (the vnc guest runs in the control plane's process, not counted). */
  guestCpuMs: number;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Has the reader read one case, with the CPU the broker and the rdp guest spent over the read. */
async function measure(job: ReaderJob): Promise<Run> {
  if (!reader) throw new Error('no reader');
  let before = { broker: 0, guest: 0 };
  let after = before;
  const cpus = () => ({ broker: cpuMsOf(broker?.child.pid), guest: cpuMsOf(guest?.pid) });
  const read = await reader.run(job, {
    before: () => {
      before = cpus();
    },
    after: () => {
      after = cpus();
    },
  });
  return {
    bytesPerSecond: read.streamedBytes / read.seconds,
    firstByteMs: read.firstByteMs,
    askedBytesPerSecond: read.bytes / (read.firstByteMs / 1000 + read.seconds),
    bytes: read.bytes,
    // the vnc direct case does not pass through the broker: what it spent then was not this read's
    brokerCpuMs: job === 'vncDirect' ? 0 : after.broker - before.broker,
    readerCpuMs: read.cpuMs,
    guestCpuMs: after.guest - before.guest,
  };
}

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
  broker = await startBrokerProcess(kubeconfigPath, namespace, [], brokerNodeArgs);
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
  const ip = vmi?.status?.interfaces?.[0]?.ipAddress ?? '';
  guest = await startRdpGuestProcess(ip);
  reader = await startReaderProcess({
    brokerUrl: broker.url,
    namespace,
    member,
    ip,
    kubeconfigPath,
    rdpBytes,
    vncFrames,
  });
}, 900_000);

afterAll(async () => {
  await reader?.stop();
  await guest?.stop();
  if (broker) await killBrokerProcesses([broker]);
  await plane?.stop();
});

describe('console relay', () => {
  it('moves guest bytes through the rdp and vnc relays about as fast as a direct connection', async () => {
    const cases: ReaderJob[] = ['rdpDirect', 'rdpThroughBroker', 'vncDirect', 'vncThroughBroker'];
    const runs = new Map<string, Run[]>(cases.map((name) => [name, []]));
    for (let round = 0; round < repeats; round += 1) {
      for (const name of round % 2 === 0 ? cases : [...cases].reverse()) {
        const run = await measure(name);
        process.stderr.write(`console relay: ${name} ${(run.bytesPerSecond / 1e6).toFixed(1)} MB/s\n`);
        runs.get(name)?.push(run);
      }
    }
    const figures = (name: string) => {
      const each = runs.get(name) ?? [];
      const perMb = (cpuMs: (run: Run) => number) =>
        median(each.map((run) => cpuMs(run) / (run.bytes / 1e6))).toFixed(1);
      return {
        bytesPerSecond: median(each.map((run) => run.bytesPerSecond)),
        firstByteMs: median(each.map((run) => run.firstByteMs)).toFixed(0),
        askedBytesPerSecond: median(each.map((run) => run.askedBytesPerSecond)),
        broker: perMb((run) => run.brokerCpuMs),
        reader: perMb((run) => run.readerCpuMs),
        guest: perMb((run) => run.guestCpuMs),
      };
    };
    const mb = (bytesPerSecond: number) => (bytesPerSecond / 1e6).toFixed(1);
    const [load] = loadavg();
    for (const protocol of ['rdp', 'vnc']) {
      const direct = figures(`${protocol}Direct`);
      const relayed = figures(`${protocol}ThroughBroker`);
      // the vnc guest shares the control plane's process, whose CPU is not counted
      const guestCpu = (of: typeof direct) => (protocol === 'rdp' ? `guest ${of.guest}, ` : '');
      console.info(
        `console relay ${protocol}, median of ${repeats}: direct ${mb(direct.bytesPerSecond)} MB/s, through broker serve ` +
          `${mb(relayed.bytesPerSecond)} MB/s (ratio ${(relayed.bytesPerSecond / direct.bytesPerSecond).toFixed(2)}); ` +
          `first byte after ${direct.firstByteMs} ms direct, ${relayed.firstByteMs} ms relayed; from the ask to the last byte ` +
          `${mb(direct.askedBytesPerSecond)} and ${mb(relayed.askedBytesPerSecond)} MB/s ` +
          `(ratio ${(relayed.askedBytesPerSecond / direct.askedBytesPerSecond).toFixed(2)}); ` +
          `CPU ms per MB direct: ${guestCpu(direct)}reader ${direct.reader}; relayed: ${guestCpu(relayed)}` +
          `broker ${relayed.broker}, reader ${relayed.reader}; load average ${load?.toFixed(1)}`,
      );
    }
  });
});
