import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { createPoolMembers, createTestNamespace, waitForRunningVmi } from '../../support/cluster.js';
import { connectRfb, createByteReader, type RfbClient } from '../../support/rfb-client.js';
import { startTrustedHeaderBroker, useCliCluster } from '../cli/cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const sockets: WebSocket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

// The broker process's resident memory, from the kernel's view of it.
function residentBytes(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1] ?? Number.NaN) * 1024;
}

async function openVnc(url: string, path: string, login: string): Promise<RfbClient> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}${path}`, {
    headers: { 'X-Forwarded-User': login },
    perMessageDeflate: false,
  });
  sockets.push(socket);
  const read = createByteReader(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return await connectRfb(socket, read);
}

describe('corral-vdi broker serve with consoles', () => {
  it('serves the vnc console route, and holds 50 open consoles in little memory', async () => {
    const namespace = await createTestNamespace(cluster(), 'serve-consoles');
    const [member = ''] = await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const { child, url } = await startTrustedHeaderBroker(cluster().kubeconfigPath, namespace, {
      CORRAL_ADMINS: 'admin',
    });
    running.push(child);

    const claim = await fetch(`${url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: { 'x-forwarded-user': 'alice' },
    });
    expect(claim.status).toBe(200);
    const kube = new KubeCluster(cluster().kubeConfig);
    await waitForRunningVmi(kube, namespace, member);
    const path = `/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`;
    const refused = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(`${url.replace('http', 'ws')}${path}`, {
        headers: { 'X-Forwarded-User': 'bob' },
      });
      socket.once('open', () => reject(new Error("bob opened alice's console")));
      socket.once('unexpected-response', (_, response) => resolve(response.statusCode ?? 0));
      socket.once('error', () => undefined);
    });
    expect(refused).toBe(403);

    // one console first, so the measurement leaves out what any first connection loads
    const expected = renderScreen({ name: member }).rgb;
    const first = await openVnc(url, path, 'alice');
    expect(Buffer.from((await first.requestFrame()).rgb).equals(Buffer.from(expected))).toBe(true);
    const pid = child.pid ?? 0;
    const before = residentBytes(pid);
    const timings: number[] = [];
    for (let index = 0; index < 50; index += 1) {
      const started = performance.now();
      const rfb = await openVnc(url, path, 'alice');
      const frame = await rfb.requestFrame();
      timings.push(performance.now() - started);
      expect(Buffer.from(frame.rgb).equals(Buffer.from(expected))).toBe(true);
    }
    const after = residentBytes(pid);
    const sorted = [...timings].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const worst = sorted[sorted.length - 1] ?? 0;
    process.stderr.write(
      `broker serve: 51 open vnc consoles, RSS ${(after / 2 ** 20).toFixed(1)} MiB ` +
        `(+${((after - before) / 2 ** 20).toFixed(1)} MiB for 50); open to first framebuffer median ` +
        `${median.toFixed(0)} ms, worst ${worst.toFixed(0)} ms\n`,
    );
    // each console may queue a bounded amount; idle ones hold far less
    expect(after - before).toBeLessThan(100 * 2 ** 20);
  });
});
