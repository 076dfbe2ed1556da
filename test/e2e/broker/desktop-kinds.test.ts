import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { desktopSchema } from '../../../src/broker/schemas.js';
import { releasingAnnotation } from '../../../src/keys.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';
import { admin, type RunningBroker, useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const alice = 'alice@example.com';
const bob = 'bob@example.com';
const image = 'ghcr.io/acme/devbox:1.4';

const brokers = useBrokers();

interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** The plain HTTP answer to a console upgrade the broker refused. */
function refusedUpgrade(api: RunningBroker, path: string, as: string): Promise<Refusal> {
  const socket = new WebSocket(`${api.url.replace('http', 'ws')}${path}`, {
    headers: { 'Tailscale-User-Login': as },
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      socket.terminate();
      reject(new Error(`${path} upgraded for ${as}`));
    });
    socket.once('unexpected-response', (_, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('end', () => {
        const { error } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve({ status: response.statusCode ?? 0, code: error.code, message: error.message });
      });
    });
    socket.once('error', () => undefined);
  });
}

/** Every route that takes a desktop ID, called on `id` as `as`, each with its answer. */
async function callEveryDesktopRoute(
  api: RunningBroker,
  id: string,
  console: string,
  as: string,
): Promise<Record<string, Refusal>> {
  const path = `/api/vdi/desktops/${id}`;
  const answers: Record<string, Refusal> = {};
  for (const [route, method, suffix] of [
    ['read', 'GET', ''],
    ['start', 'POST', '/start'],
    ['release', 'POST', '/release'],
    ['connect', 'GET', '/connect'],
  ] as const) {
    const reply = await api.call(method, `${path}${suffix}`, { as });
    answers[route] = {
      status: reply.status,
      code: reply.body?.error?.code,
      message: reply.body?.error?.message,
    };
  }
  answers.console = await refusedUpgrade(api, `${path}/console/${console}`, as);
  return answers;
}

describe('a desktop ID names a member of its own kind', () => {
  it('answers 404 on every desktop route for a VM member named as a container desktop and a container member named as a VM, and leaves both claims alone', async () => {
    const namespace = await createTestNamespace(cluster(), 'broker-kinds');
    await createPoolMembers(cluster(), namespace, 'bp', 1);
    const api = await brokers.start(cluster(), namespace, createTestClock(new Date()));
    await api.vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
    await api.broker.reconcileCtPools();
    await waitFor(() => api.vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
      describe: `Pod ${namespace}/devbox-1 to be Ready`,
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    const vmClaim = await api.call('POST', `/api/vdi/pools/vm/${namespace}/bp/claim`, { as: bob });
    const ctClaim = await api.call('POST', `/api/vdi/pools/ct/${namespace}/devbox/claim`, { as: alice });
    expect([vmClaim.status, vmClaim.body.member, ctClaim.status, ctClaim.body.member]).toEqual([
      200,
      'bp-1',
      200,
      'devbox-1',
    ]);

    const wrongKinds = [
      { id: `ct/${namespace}/bp-1`, console: 'terminal', holder: bob, rightId: `vm/${namespace}/bp-1` },
      { id: `vm/${namespace}/devbox-1`, console: 'vnc', holder: alice, rightId: `ct/${namespace}/devbox-1` },
    ];
    for (const { id, console, holder, rightId } of wrongKinds) {
      for (const as of [holder, admin]) {
        const answers = await callEveryDesktopRoute(api, id, console, as);
        for (const [route, answer] of Object.entries(answers)) {
          expect([route, answer.status, answer.code], `${route} of ${id} as ${as}`).toEqual([
            route,
            404,
            'MEMBER_NOT_FOUND',
          ]);
          expect(answer.message, `${route} of ${id} as ${as}`).toContain(rightId);
        }
      }
    }

    // neither claim was touched: each reads under its own kind, held, with no release under way
    for (const [id, holder] of [
      [`vm/${namespace}/bp-1`, bob],
      [`ct/${namespace}/devbox-1`, alice],
    ] as const) {
      const read = await api.call('GET', `/api/vdi/desktops/${id}`, { as: holder });
      expect([read.status, desktopSchema.parse(read.body).owner], id).toEqual([200, holder]);
    }
    for (const member of ['bp-1', 'devbox-1']) {
      const lease = await api.vdi.context.cluster.getLease(namespace, leaseNameFor(member));
      expect(lease?.metadata.annotations?.[releasingAnnotation], member).toBeUndefined();
    }
    expect(await api.vdi.context.cluster.resource(podKind).in(namespace).get('bp-1')).toBeUndefined();
  });

  it('answers 404 for a VM that is no pool member, saying so, on its desktop and connect routes', async () => {
    const namespace = await createTestNamespace(cluster(), 'broker-nonmember');
    await createPoolMembers(cluster(), namespace, 'bp', 1);
    const api = await brokers.start(cluster(), namespace, createTestClock(new Date()));
    await api.vdi.context.cluster.createVm(namespace, stoppedVm('golden'));

    for (const suffix of ['', '/connect']) {
      for (const as of [alice, admin]) {
        const reply = await api.call('GET', `/api/vdi/desktops/vm/${namespace}/golden${suffix}`, { as });
        expect([reply.status, reply.body.error.code], `${suffix} as ${as}`).toEqual([
          404,
          'MEMBER_NOT_FOUND',
        ]);
        expect(reply.body.error.message).toContain('not a member of any pool');
      }
    }
  });
});
