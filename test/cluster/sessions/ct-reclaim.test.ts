import { describe, expect, it } from 'vitest';
import type { VdiEvents } from '../../../src/events.js';
import { leaseKindLabel } from '../../../src/keys.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
const alice = 'alice@example.com';
const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const vdi = createVdi({
    kubeConfig: cluster().kubeConfig,
    namespace,
    clock,
    retry: { retries: 1, minDelayMs: 10 },
  });
  const events: Array<VdiEvents['reclaimed'][0]> = [];
  vdi.events.on('reclaimed', (event) => events.push(event));
  await vdi.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 1 } });
  await vdi.reconcileCtPool({ name: 'devbox' });
  await waitFor(() => vdi.context.cluster.getPod(namespace, 'devbox-1'), {
    describe: `Pod ${namespace}/devbox-1 to be Ready`,
    until: (pod) => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
  const claimed = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
  const engine = createSessionEngine(vdi.context, {
    namespaces: [namespace],
    policy: { disconnectGraceMs: grace },
  });
  const uid = (await vdi.context.cluster.getPod(namespace, claimed.member))?.metadata.uid;
  return { namespace, clock, vdi, events, engine, member: claimed.member, uid };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

// a terminal opened and closed, then the grace passes
async function abandon({ engine, clock, member, namespace }: Setup): Promise<void> {
  const handle = await engine.openConsole({ member, identity: alice, kind: 'terminal' });
  expect(handle.desktopId).toBe(`ct/${namespace}/${member}`);
  clock.advance(minute);
  await handle.close();
  clock.advance(grace);
}

async function expectRecreated(setup: Setup): Promise<void> {
  const { vdi, namespace, member, uid } = setup;
  expect(await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  const pod = await vdi.context.cluster.getPod(namespace, member);
  expect(pod?.metadata.uid).toBeDefined();
  expect(pod?.metadata.uid).not.toBe(uid);
  expect(setup.events).toEqual([
    { desktopId: `ct/${namespace}/${member}`, holder: alice, reason: 'disconnect-grace' },
  ]);
}

describe('reclaiming container desktops', () => {
  it('records the kind on the claim and reclaims a container desktop through its backend, making its Pod again', async () => {
    const setup = await setUp('ct-reclaim');
    const lease = await setup.vdi.context.cluster.getLease(setup.namespace, `corral-vdi-${setup.member}`);
    expect(lease?.metadata.labels?.[leaseKindLabel]).toBe('ct');
    await abandon(setup);
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    await expectRecreated(setup);
  });

  it('finds the kind of a claim written before claims recorded it from the member itself', async () => {
    const setup = await setUp('ct-reclaim-old');
    const { cluster: kube } = setup.vdi.context;
    const lease = await kube.getLease(setup.namespace, `corral-vdi-${setup.member}`);
    const { [leaseKindLabel]: _kind, ...labels } = lease?.metadata.labels ?? {};
    await kube.replaceLease(setup.namespace, { ...lease!, metadata: { ...lease!.metadata, labels } });
    await abandon(setup);
    expect(await setup.engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    await expectRecreated(setup);
  });
});
