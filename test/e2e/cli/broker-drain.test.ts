import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers } from '../../support/cluster.js';
import { type DelayedLoadBalancer, startDelayedLoadBalancer } from '../../support/delayed-load-balancer.js';
import { cliEnv, collectOutput, createNamespace, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const running: ChildProcess[] = [];
const sockets: WebSocket[] = [];
const balancers: DelayedLoadBalancer[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const balancer of balancers.splice(0)) await balancer.close();
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

// the load balancer keeps a terminating replica this long, well inside the replicas' drain delay
const endpointRemovalMs = 1_000;
const drainDelay = '3s';

async function startReplica(namespace: string): Promise<{ child: ChildProcess; backend: string }> {
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
      '--leader-elect',
    ],
    cliEnv({ CORRAL_VDI_BROKER: '1', CORRAL_VDI_DRAIN_DELAY: drainDelay }),
  );
  running.push(child);
  const started = await collectOutput(child).waitFor(/broker listening on http:\/\/(\S+)/);
  const backend = /broker listening on http:\/\/(\S+)/.exec(started)?.[1] ?? '';
  await waitFor(async () => (await fetch(`http://${backend}/readyz`)).status, {
    describe: `the replica on ${backend} to report ready`,
    until: (status) => status === 200,
  });
  return { child, backend };
}

interface Console {
  user: string;
  backend: string;
  closes: number[];
  reopenedOn: string[];
}

describe('two broker serve replicas behind a load balancer that drops a terminating one late', () => {
  it('a rolling update of one replica fails no request, and its consoles close with 1001 and reopen on the other', async () => {
    const namespace = await createNamespace(cluster(), 'broker-drain');
    await createPoolMembers(cluster(), namespace, 'devpool', 4);
    const replicas = [await startReplica(namespace), await startReplica(namespace)];
    const [old, other] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const balancer = await startDelayedLoadBalancer(replicas.map((replica) => replica.backend));
    balancers.push(balancer);
    const api = `${balancer.url}/api/vdi`;
    const users = ['ann', 'ben', 'cai', 'dee'];

    const members = new Map<string, string>();
    for (const user of users) {
      const claim = await fetch(`${api}/pools/vm/${namespace}/devpool/claim`, {
        method: 'POST',
        headers: { 'x-forwarded-user': user },
      });
      expect(claim.status).toBe(200);
      members.set(user, ((await claim.json()) as { member: string }).member);
    }
    for (const user of users) {
      await waitFor(
        async () =>
          (await (
            await fetch(`${api}/desktops/vm/${namespace}/${members.get(user)}`, {
              headers: { 'x-forwarded-user': user },
            })
          ).json()) as { running: boolean },
        { describe: `the desktop of ${user} to run`, until: (desktop) => desktop.running },
      );
    }

    let consoleFailures = 0;
    const openConsole = (user: string, seen?: Console): Promise<Console> =>
      new Promise((resolve, reject) => {
        const socket = new WebSocket(
          `${api.replace('http', 'ws')}/desktops/vm/${namespace}/${members.get(user)}/console/serial`,
          { headers: { 'x-forwarded-user': user } },
        );
        sockets.push(socket);
        let backend = '';
        socket.once('upgrade', (res) => {
          backend = balancer.backendOf(res.socket.localPort ?? 0) ?? '';
        });
        socket.once('error', (error) => {
          consoleFailures += 1;
          reject(error);
        });
        socket.once('open', () => {
          const opened: Console = seen ?? { user, backend, closes: [], reopenedOn: [] };
          if (seen) seen.reopenedOn.push(backend);
          socket.once('close', (code) => {
            opened.closes.push(code);
            // a browser's page reconnects when the broker says it goes away
            if (code === 1001) void openConsole(user, opened).catch(() => {});
            else consoleFailures += 1;
          });
          resolve(opened);
        });
      });
    // one at a time, so the balancer's turns put every other console on each replica
    const consoles: Console[] = [];
    for (const user of users) consoles.push(await openConsole(user));
    const onOld = consoles.filter((each) => each.backend === old.backend);
    expect(onOld.length).toBeGreaterThan(0);
    expect(consoles.filter((each) => each.backend === other.backend).length).toBeGreaterThan(0);

    // claim and look, over and over, as the Desktops page of each user does
    let sent = 0;
    const failed: string[] = [];
    let loading = true;
    const load = users.map(async (user) => {
      const headers = { 'x-forwarded-user': user };
      const calls = [
        () => fetch(`${api}/pools/vm/${namespace}/devpool/claim`, { method: 'POST', headers }),
        () => fetch(`${api}/desktops/vm/${namespace}/${members.get(user)}`, { headers }),
      ];
      for (let turn = 0; loading; turn += 1) {
        sent += 1;
        try {
          const answer = await (calls[turn % calls.length] as () => Promise<Response>)();
          await answer.arrayBuffer();
          if (answer.status !== 200) failed.push(`${user}: ${answer.status}`);
        } catch (error) {
          failed.push(`${user}: ${(error as Error).cause ?? error}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sentBefore = sent;

    const toOldBefore = balancer.connectionsTo(old.backend);
    old.child.kill('SIGTERM');
    balancer.removeAfter(old.backend, endpointRemovalMs);
    const exitCode = await new Promise<number | null>((resolve) =>
      old.child.exitCode !== null ? resolve(old.child.exitCode) : old.child.once('exit', resolve),
    );
    await waitFor(() => onOld.every((each) => each.reopenedOn.length > 0) || consoleFailures > 0, {
      describe: 'the consoles of the old replica to reopen',
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    loading = false;
    await Promise.all(load);

    const drainedConnections = balancer.connectionsTo(old.backend) - toOldBefore;
    const reopened = onOld.filter((each) => each.reopenedOn.length > 0).length;
    console.log(
      `requests sent: ${sent} (${sent - sentBefore} from SIGTERM on), failed: ${failed.length}; connections to the old replica after SIGTERM: ${drainedConnections}; consoles on the old replica: ${onOld.length}, reopened: ${reopened}`,
    );
    expect(exitCode).toBe(0);
    expect(failed).toEqual([]);
    // the balancer still sent it new connections after SIGTERM, and each was answered
    expect(drainedConnections).toBeGreaterThan(0);
    expect(consoleFailures).toBe(0);
    expect(onOld.map((each) => [each.closes, each.reopenedOn])).toEqual(
      onOld.map(() => [[1001], [other.backend]]),
    );
    // the consoles of the replica that stays were never touched
    expect(consoles.filter((each) => each.backend === other.backend).flatMap((each) => each.closes)).toEqual(
      [],
    );
  });
});
