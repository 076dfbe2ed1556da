import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers } from '../../support/cluster.js';
import { cliEnv, collectOutput, createNamespace, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const sockets: WebSocket[] = [];

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );
}

describe('corral-vdi broker serve, run as a platform runs it', () => {
  it('answers the probes, serves metrics on their own listener, logs JSON with request IDs, and on SIGTERM closes consoles with 1001 and exits 0', async () => {
    const namespace = await createNamespace(cluster(), 'broker-ops');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const child = startCli(
      [
        'broker',
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--metrics-listen',
        '127.0.0.1:0',
        '--log-format',
        'json',
        '--trust-header',
        'X-Forwarded-User',
        '-n',
        namespace,
        '--kubeconfig',
        cluster().kubeconfigPath,
      ],
      cliEnv({ CORRAL_VDI_BROKER: '1', CORRAL_ADMINS: 'admin' }),
    );
    running.push(child);
    const log = collectOutput(child);
    const started = await log.waitFor(/metrics: (http:\/\/\S+)\/metrics\n/);
    const url = /broker listening on (http:\/\/\S+)/.exec(started)?.[1] ?? '';
    const metricsUrl = /metrics: (http:\/\/\S+)\/metrics/.exec(started)?.[1] ?? '';

    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'alive' });
    // ready once its watch caches hold their first lists
    await waitFor(async () => (await fetch(`${url}/readyz`)).json(), {
      describe: 'the broker to report ready',
      until: (body) => JSON.stringify(body) === JSON.stringify({ status: 'ready' }),
    });
    // the API's listener does not serve the metrics when they have their own, which serves the probes too
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    expect(await (await fetch(`${metricsUrl}/readyz`)).json()).toEqual({ status: 'ready' });
    expect((await fetch(`${metricsUrl}/api/vdi/pools`)).status).toBe(404);
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    expect(metrics).toContain('\ncorral_vdi_leader 1\n');
    expect(metrics).toContain(
      `corral_vdi_pool_desired_members{kind="vm",namespace="${namespace}",pool="devpool"} 1`,
    );

    const bob = { 'x-forwarded-user': 'bob', 'x-request-id': 'claim-by-bob-1' };
    const claim = await fetch(`${url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: bob,
    });
    expect(claim.status).toBe(200);
    expect(claim.headers.get('x-request-id')).toBe('claim-by-bob-1');
    const { member } = (await claim.json()) as { member: string };
    const logged = await log.waitFor(/"requestId":"claim-by-bob-1".*\n/);
    const line = logged.split('\n').find((each) => each.includes('"requestId":"claim-by-bob-1"')) ?? '';
    expect(JSON.parse(line)).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: 'info',
      msg: expect.stringContaining(`POST /api/vdi/pools/vm/${namespace}/devpool/claim 200`),
      requestId: 'claim-by-bob-1',
      method: 'POST',
      path: `/api/vdi/pools/vm/${namespace}/devpool/claim`,
      status: 200,
      durationMs: expect.any(Number),
    });

    await waitFor(
      async () =>
        (await (
          await fetch(`${url}/api/vdi/desktops/vm/${namespace}/${member}`, { headers: bob })
        ).json()) as {
          running: boolean;
        },
      { describe: `${member} to run`, until: (desktop) => desktop.running },
    );
    const socket = new WebSocket(
      `${url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/serial`,
      { headers: { 'x-forwarded-user': 'bob' } },
    );
    sockets.push(socket);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );

    child.kill('SIGTERM');
    expect(await closed).toEqual({ code: 1001, reason: 'The broker is shutting down.' });
    expect(await exitOf(child)).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });

  it('refuses a log format it does not know before it reaches the cluster', async () => {
    const child = startCli(
      [
        'broker',
        'serve',
        '--trust-header',
        'X-Forwarded-User',
        '--log-format',
        'xml',
        '--kubeconfig',
        '/nonexistent',
      ],
      cliEnv(),
    );
    const output = collectOutput(child);
    expect(await exitOf(child)).toBe(2);
    expect(output.text()).toContain('--log-format takes text or json, not "xml"');
  });
});
