import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { renderScreen } from '../../../src/testing/kubevirt/rfb-screen.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, waitForRunningVmi } from '../../support/cluster.js';
import { connectRfb, createByteReader, pasteMessages, sendPaced } from '../../support/rfb-client.js';
import { startTrustedHeaderBroker, useCliCluster } from '../cli/cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const sockets: WebSocket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

const pasteBytes = 1_000_000;
const messageBytes = 16;

// Another user: GET /api/vdi/pools and /healthz one after another until stdin closes, a JSON line per answer.
const bobsRequests = `
const base = process.argv[1];
let stopped = false;
process.stdin.on('end', () => { stopped = true; }).resume();
while (!stopped) {
  for (const path of ['/api/vdi/pools', '/healthz']) {
    const started = performance.now();
    const response = await fetch(base + path, { headers: { 'x-forwarded-user': 'bob' } });
    await response.arrayBuffer();
    const line = { path, status: response.status, ms: performance.now() - started, answeredAt: Date.now() };
    process.stdout.write(JSON.stringify(line) + '\\n');
  }
}
`;

// The broker process's resident memory and CPU time (user + system), from the kernel's view of it.
function residentBytes(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1] ?? Number.NaN) * 1024;
}
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

describe('corral-vdi broker serve with a paste in tiny messages', () => {
  it("relays a 1,000,000-byte ClientCutText in 16-byte messages while another user's requests are answered, and the console answers after it", async () => {
    const namespace = await createTestNamespace(cluster(), 'serve-paste');
    const [member = ''] = await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const { child, url } = await startTrustedHeaderBroker(cluster().kubeconfigPath, namespace);
    running.push(child);
    const claim = await fetch(`${url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: { 'x-forwarded-user': 'alice' },
    });
    expect(claim.status).toBe(200);
    await waitForRunningVmi(new KubeCluster(cluster().kubeConfig), namespace, member);

    const socket = new WebSocket(
      `${url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/vnc`,
      { headers: { 'X-Forwarded-User': 'alice' }, perMessageDeflate: false },
    );
    sockets.push(socket);
    const read = createByteReader(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const rfb = await connectRfb(socket, read);
    const expected = Buffer.from(renderScreen({ name: member }).rgb);
    expect(Buffer.from((await rfb.requestFrame()).rgb).equals(expected)).toBe(true);

    const bob = spawn(process.execPath, ['--input-type=module', '-e', bobsRequests, url], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    running.push(bob);
    const answers: Array<{ path: string; status: number; ms: number; answeredAt: number }> = [];
    createInterface({ input: bob.stdout }).on('line', (line) => answers.push(JSON.parse(line)));
    const bobDone = new Promise((resolve) => bob.once('exit', resolve));
    await waitFor(() => answers.length >= 2, { describe: "bob's first answers" });

    const pid = child.pid ?? 0;
    const before = { rss: residentBytes(pid), cpu: cpuSeconds(pid), answers: answers.length };
    const started = performance.now();
    await sendPaced(socket, pasteMessages(pasteBytes, messageBytes), messageBytes);
    // the desktop answers this request only after it has read the whole paste: the stream is in order
    const frame = await rfb.requestFrame();
    const endedAt = Date.now();
    const seconds = (performance.now() - started) / 1000;
    const after = { rss: residentBytes(pid), cpu: cpuSeconds(pid) };
    bob.stdin?.end();
    await bobDone;
    expect(Buffer.from(frame.rgb).equals(expected)).toBe(true);

    const during = answers.slice(before.answers).filter((answer) => answer.answeredAt <= endedAt);
    const worst = (path: string) =>
      Math.max(0, ...during.filter((answer) => answer.path === path).map((answer) => answer.ms));
    process.stderr.write(
      `broker serve: a ${pasteBytes}-byte paste in ${messageBytes}-byte messages took ${seconds.toFixed(1)} s and ` +
        `${(after.cpu - before.cpu).toFixed(1)} s of the broker's CPU, RSS ${(before.rss / 2 ** 20).toFixed(0)} → ` +
        `${(after.rss / 2 ** 20).toFixed(0)} MiB; meanwhile bob had ${during.length} answers, the slowest ` +
        `${worst('/api/vdi/pools').toFixed(0)} ms for /api/vdi/pools and ${worst('/healthz').toFixed(0)} ms for /healthz\n`,
    );
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    // both of bob's requests were answered while the paste was going through, not only once it had, and none
    // waited anywhere near the 20 s and more that one console's paste used to cost everyone
    expect(during.map((answer) => answer.path)).toEqual(
      expect.arrayContaining(['/api/vdi/pools', '/healthz']),
    );
    expect(Math.max(worst('/api/vdi/pools'), worst('/healthz'))).toBeLessThan(5_000);
    // a console holds a bounded amount, however small its messages
    expect(after.rss - before.rss).toBeLessThan(100 * 2 ** 20);
  });
});
