import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import type { VdiEvents } from '../../../src/events.js';
import { reclaimWarnedAnnotation } from '../../../src/keys.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const alice = 'alice@example.com';
const cluster = useSharedCluster();
const policy = { disconnectGraceMs: 15 * minute, maxSessionMs: 60 * minute, reclaimWarningMs: 5 * minute };

/** A webhook receiver on 127.0.0.1 that keeps every JSON body it is sent. */
async function startReceiver() {
  const bodies: Array<Record<string, unknown>> = [];
  const server = createServer((request: IncomingMessage, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => {
      bodies.push(JSON.parse(text) as Record<string, unknown>);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, bodies, close: () => new Promise((r) => server.close(r)) };
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Two broker replicas' SDK instances on one namespace and one clock, each with its own events. */
async function setUp(prefix: string, pool: Omit<Parameters<typeof createPool>[1], 'name' | 'from' | 'size'>) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const replicas = ['replica-a', 'replica-b'].map((replicaId) => {
    const vdi = createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock,
      audit: new MemoryAuditSink(),
    });
    const warnings: VdiEvents['reclaim-warning'][0][] = [];
    const reclaims: VdiEvents['reclaimed'][0][] = [];
    vdi.events.on('reclaim-warning', (event) => warnings.push(event));
    vdi.events.on('reclaimed', (event) => reclaims.push(event));
    const engine = createSessionEngine(vdi.context, { namespaces: [namespace], policy, replicaId });
    return { vdi, engine, warnings, reclaims };
  });
  const [first] = replicas;
  await first!.vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
  await createPool(first!.vdi.context, { name: 'devpool', from: 'golden', size: 1, namespace, ...pool });
  const { member } = await first!.vdi.claim({ pool: 'devpool', identity: alice });
  const lease = () => first!.vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
  return { namespace, clock, replicas, member, lease, desktopId: `vm/${namespace}/${member}` };
}

describe('warnings before a reclaim for the maximum session', () => {
  it('warns the holder once across two replicas, with one webhook call, then the notify pool reports the reclaim', async () => {
    const receiver = await startReceiver();
    closers.push(receiver.close);
    const setup = await setUp('warn-replicas', {
      reclaimAction: 'notify',
      reclaimWebhook: receiver.url,
      allowLoopbackHttpWebhook: true,
    });
    const claimedAt = setup.clock.now().getTime();
    const reclaimAt = new Date(claimedAt + 60 * minute).toISOString();

    setup.clock.advance(54 * minute);
    const early = await Promise.all(setup.replicas.map(({ engine }) => engine.runPass()));
    expect(early.map((result) => result.warned)).toEqual([0, 0]);

    setup.clock.advance(2 * minute);
    // both replicas plan the warning from the same Lease at once; the conditional mark lets one of them give it
    const passes = await Promise.all(setup.replicas.map(({ engine }) => engine.runPass()));
    expect(passes.map((result) => result.errors)).toEqual([[], []]);
    expect(passes.reduce((sum, result) => sum + result.warned, 0)).toBe(1);
    const warnings = setup.replicas.flatMap((replica) => replica.warnings);
    const facts = {
      desktopId: setup.desktopId,
      pool: 'devpool',
      holder: alice,
      reason: 'max-duration',
      reclaimAt,
    };
    expect(warnings).toEqual([{ ...facts, webhook: { ok: true, status: 204 } }]);
    expect(receiver.bodies).toEqual([{ event: 'reclaim-warning', ...facts }]);
    const lease = await setup.lease();
    expect(lease?.metadata.annotations?.[reclaimWarnedAnnotation]).toBe(`max-duration ${reclaimAt}`);
    expect(
      setup.replicas[1]!.engine.describe({ namespace: setup.namespace, member: setup.member, lease }),
    ).toEqual({
      connected: false,
      disconnectedAt: undefined,
      reclaimAt,
      reclaimReason: 'max-duration',
      reclaimWarning: true,
    });

    // later passes before the instant warn no more
    setup.clock.advance(2 * minute);
    await Promise.all(setup.replicas.map(({ engine }) => engine.runPass()));
    expect(receiver.bodies).toHaveLength(1);

    setup.clock.advance(2 * minute);
    expect(await setup.replicas[0]!.engine.runPass()).toMatchObject({ notified: 1, warned: 0, errors: [] });
    expect(receiver.bodies.map((body) => body.event)).toEqual(['reclaim-warning', 'reclaim-notified']);
  });

  it('warns, then stops the desktop of a stop pool at its maximum session; a pool without webhook calls none', async () => {
    const setup = await setUp('warn-stop', { reclaimAction: 'stop' });
    const [replica] = setup.replicas;
    setup.clock.advance(57 * minute);
    expect(await replica!.engine.runPass()).toMatchObject({ warned: 1, reclaimed: 0, errors: [] });
    expect(replica!.warnings).toEqual([expect.not.objectContaining({ webhook: expect.anything() })]);
    setup.clock.advance(3 * minute);
    expect(await replica!.engine.runPass()).toMatchObject({ warned: 0, reclaimed: 1, errors: [] });
    expect(replica!.reclaims).toEqual([
      { desktopId: setup.desktopId, holder: alice, reason: 'max-duration' },
    ]);
    expect(await setup.lease()).toBeUndefined();
  });
});
