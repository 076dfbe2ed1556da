import { expect } from 'vitest';
import WebSocket from 'ws';
import type { RdCleanPathPdu } from '../../../src/broker/rdcleanpath.js';
import { rdpGuestAnnotations } from '../../../src/testing/rdp-guest.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import {
  createPoolMembers,
  createTestNamespace,
  type useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { createRdCleanPathReader, rdCleanPathRequest } from '../../support/rdcleanpath-client.js';
import { type RunningBroker, startBroker } from './broker-support.js';

export const alice = 'alice@example.com';
export const bob = 'bob@example.com';

/** Sets up, for one test file, brokers over pools whose members alice claims, and closes what they opened. */
export function useRdpBrokers(cluster: ReturnType<typeof useSharedCluster>) {
  const running: RunningBroker[] = [];
  const sockets: WebSocket[] = [];
  const closers: (() => Promise<void>)[] = [];

  /**
   * A broker over a pool of `size` members; alice claims the first, whose template carries `rdpServer` (the test
   * kit's RDP server knob) when given, and it runs.
   */
  async function setUp(
    options: { size?: number; rdpServer?: string; broker?: Parameters<typeof startBroker>[3] } = {},
  ) {
    const namespace = await createTestNamespace(cluster(), 'rdp');
    const members = await createPoolMembers(cluster(), namespace, 'devpool', options.size ?? 1);
    const clock = createTestClock(new Date());
    const api = await startBroker(cluster(), namespace, clock, {
      rdpHandshakeTimeoutMs: 2_000,
      ...options.broker,
    });
    running.push(api);
    const kube = api.vdi.context.cluster;
    if (options.rdpServer !== undefined) {
      // the guests' RDP servers stop with their VMIs
      closers.push(async () => {
        for (const member of members) await kube.stopVm(namespace, member).catch(() => undefined);
      });
      for (const member of members) {
        await kube.patchVm(namespace, member, {
          spec: {
            template: { metadata: { annotations: { [rdpGuestAnnotations.server]: options.rdpServer } } },
          },
        });
      }
    }
    const claim = await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, { as: alice });
    expect(claim.status).toBe(200);
    const member: string = claim.body.member;
    const vmi = await waitForRunningVmi(kube, namespace, member);
    const ip = vmi.status?.interfaces?.[0]?.ipAddress ?? '';
    return { namespace, members, member, ip, clock, api };
  }

  /** Mints a token as `as`; the answer as the API gave it. */
  const mint = (api: RunningBroker, namespace: string, member: string, as: string) =>
    api.call('POST', `/api/vdi/desktops/vm/${namespace}/${member}/console/rdp/token`, { as });

  /** Opens the rdp console websocket as `as`; resolves once it is open. */
  async function openRdp(api: RunningBroker, namespace: string, member: string, as: string) {
    const socket = new WebSocket(
      `${api.url.replace('http', 'ws')}/api/vdi/desktops/vm/${namespace}/${member}/console/rdp`,
      {
        headers: { 'Tailscale-User-Login': as },
        perMessageDeflate: false,
      },
    );
    sockets.push(socket);
    const reader = createRdCleanPathReader(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return { socket, reader };
  }

  /** Mints a token, opens the console and sends the request; the broker's answer PDU. */
  async function connectRdp(
    api: RunningBroker,
    namespace: string,
    member: string,
    as = alice,
  ): Promise<{ pdu: RdCleanPathPdu | undefined } & Awaited<ReturnType<typeof openRdp>>> {
    const minted = await mint(api, namespace, member, as);
    expect(minted.status).toBe(200);
    const opened = await openRdp(api, namespace, member, as);
    opened.socket.send(rdCleanPathRequest(minted.body.token, minted.body.destination));
    return { ...opened, pdu: await opened.reader.pdu() };
  }

  return {
    setUp,
    mint,
    openRdp,
    connectRdp,
    track: (close: () => Promise<void>) => closers.push(close),
    addBroker: (api: RunningBroker) => running.push(api),
    async cleanUp() {
      for (const socket of sockets.splice(0)) socket.terminate();
      await Promise.all(running.splice(0).map((api) => api.close()));
      await Promise.all(closers.splice(0).map((close) => close()));
    },
  };
}
