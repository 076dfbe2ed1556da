import type { ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  cliEnv,
  collectOutput,
  createGoldenVm,
  createNamespace,
  jsonOf,
  type OutputLog,
  runCli,
  startCli,
  useCliCluster,
} from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function startBroker(
  namespace: string,
  env: Record<string, string>,
  extra: string[] = [],
): Promise<{ child: ChildProcess; url: string; output: string; log: OutputLog }> {
  const child = startCli(
    [
      'broker',
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--trust-header',
      'X-Forwarded-User',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
      ...extra,
    ],
    cliEnv(env),
  );
  running.push(child);
  const log = collectOutput(child);
  const listening = /broker listening on (http:\/\/\S+)|"url": "(http:\/\/[^"]+)"/;
  const output = await log.waitFor(listening);
  const match = listening.exec(output);
  return { child, url: match?.[1] ?? match?.[2] ?? '', output, log };
}

/** A stand-in for the identity proxy in front of the broker: it adds the login header to every request. */
async function startProxy(target: string, login: string): Promise<string> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, 'x-forwarded-user': login },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(forwarded);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );
}

describe('corral-vdi broker serve', () => {
  it('serves claims and releases for the login of the trusted header, answers connect through the CLI, and stops on SIGTERM', async () => {
    const namespace = await createNamespace(cluster(), 'broker');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await runCli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    expect(created.code, created.stderr).toBe(0);

    const { child, url, output } = await startBroker(namespace, {
      CORRAL_VDI_BROKER: '1',
      CORRAL_ADMINS: 'admin',
    });
    expect(output).toContain(`(namespaces ${namespace}; login from header X-Forwarded-User)`);
    expect(output).toContain(
      `broker: on for namespaces ${namespace}: every 30s, in this process, it renews the claims, reclaims by the ` +
        "policy (disconnect grace 15m, max session off, idle off or the pool's own), keeps warm spares and " +
        'reconciles container pools.\n',
    );
    const bob = { 'x-forwarded-user': 'bob' };

    const claim = await fetch(`${url}/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      method: 'POST',
      headers: bob,
    });
    expect(claim.status).toBe(200);
    const desktop = (await claim.json()) as { id: string; member: string; owner: string };
    expect(desktop).toMatchObject({ owner: 'bob', id: `vm/${namespace}/${desktop.member}` });

    const anonymous = await fetch(`${url}/api/vdi/pools/vm/${namespace}/devpool/claim`, { method: 'POST' });
    expect(anonymous.status).toBe(401);

    // connect --broker: the broker decides, as the login its proxy vouches for
    const proxy = await startProxy(url, 'bob');
    await waitFor(
      async () =>
        (await (
          await fetch(`${url}/api/vdi/desktops/vm/${namespace}/${desktop.member}`, { headers: bob })
        ).json()) as { running: boolean },
      { describe: `the broker to show ${desktop.member} running`, until: (state) => state.running },
    );
    const connected = await runCli(['connect', desktop.member, '-n', namespace, '--broker', proxy], cliEnv());
    expect(connected.code, connected.stderr).toBe(0);
    expect(connected.stdout.split('\n').slice(0, 2)).toEqual([
      `desktop vm/${namespace}/${desktop.member} (held by bob)`,
      `connect: VNC: virtctl vnc ${desktop.member} -n ${namespace}`,
    ]);
    const asCarol = await runCli(
      ['connect', desktop.member, '-n', namespace],
      cliEnv({ CORRAL_VDI_BROKER_URL: await startProxy(url, 'carol') }),
    );
    expect(asCarol.code).toBe(1);
    expect(asCarol.stderr).toMatch(/^error: .*held by another/);
    const direct = await runCli(
      ['connect', desktop.member, '-n', namespace, '--broker', url, '-o', 'json'],
      cliEnv(),
    );
    expect(direct.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(direct).error).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: expect.stringContaining('Reach the broker through the proxy that signs you in'),
    });

    const release = await fetch(`${url}/api/vdi/desktops/vm/${namespace}/${desktop.member}/release`, {
      method: 'POST',
      headers: bob,
    });
    expect(release.status).toBe(202);
    const { task } = (await release.json()) as { task: string };
    const finished = await waitFor(
      async () =>
        ((await (await fetch(`${url}/api/tasks/${task}`, { headers: bob })).json()) as { status: string })
          .status,
      { describe: `the release task ${task} to finish`, until: (status) => status !== 'running' },
    );
    expect(finished).toBe('done');
    const listed = await runCli([
      'pool',
      'list',
      '-n',
      namespace,
      '-o',
      'json',
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    expect(jsonOf<{ pools: Array<{ counts: { free: number } }> }>(listed).pools[0]?.counts.free).toBe(2);

    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  });

  it('says at start that the broker is off when CORRAL_VDI_BROKER is not 1, and then answers 404 on every /api/vdi/ route', async () => {
    const namespace = await createNamespace(cluster(), 'broker-off');
    const { child, url, log } = await startBroker(namespace, {}, ['-o', 'json']);
    const output = await log.waitFor(/\n\}\n/);
    expect(output).toContain(
      'broker: off (enabled is false; CORRAL_VDI_BROKER=1 turns it on): every /api/vdi/ route answers 404, and ' +
        'this process renews no claim, reclaims nothing, keeps no spares and reconciles no container pool.\n',
    );
    const started = JSON.parse(output.replace(/^broker: .*\n/gm, '')) as unknown;
    expect(started).toEqual({
      url,
      enabled: false,
      namespaces: [namespace],
      trustHeader: 'X-Forwarded-User',
    });
    expect((await fetch(`${url}/api/vdi/pools`, { headers: { 'x-forwarded-user': 'bob' } })).status).toBe(
      404,
    );
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
  });

  it('refuses a listen address that is not host:port', async () => {
    const run = await runCli([
      'broker',
      'serve',
      '--listen',
      'localhost',
      '--trust-header',
      'X-Forwarded-User',
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'error: --listen "localhost" is not host:port; use for example 127.0.0.1:8080 or [::1]:8080.\n',
    );
  });
});
