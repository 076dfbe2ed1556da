// One reclaim pass over 2,000 claimed desktops against the local control plane: apiserver requests and wall
// time per pass with nothing to do, and, once, a pass that renews every Lease.
// Run: npx vitest run -c bench/vitest.config.ts bench/reclaim-pass.bench.ts
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionEngine, type SessionEngine } from '../src/sessions/session-engine.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { createTestClock } from '../src/testing/test-clock.js';
import { createVdi, type Vdi } from '../src/vdi.js';
import { createNamespace, seedClaimedDesktops } from './support/seed.js';

const desktops = 2000;
const namespace = 'bench-sessions';
const pool = 'benchpool';
const clock = createTestClock();

const timedPasses = 20;

let cluster: LocalCluster | undefined;
let vdi: Vdi;
let engine: SessionEngine;

function requestsByVerb(): string {
  return [...vdi.context.cluster.requestCounts].map(([verb, count]) => `${verb} ${count}`).join(', ');
}

async function timedPass() {
  const started = performance.now();
  const result = await engine.runPass();
  return { result, ms: performance.now() - started };
}

beforeAll(async () => {
  cluster = await startLocalCluster();
  await createNamespace(cluster.kubeConfig, namespace);
  vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace, clock });
  const now = clock.now().toISOString();
  const started = performance.now();
  await seedClaimedDesktops(vdi.context.cluster, namespace, pool, desktops, () => now);
  console.info(`created ${desktops} VMs and claim Leases in ${Math.round(performance.now() - started)} ms`);
  engine = createSessionEngine(vdi.context, { namespaces: [namespace] });
}, 900_000);

afterAll(async () => {
  await cluster?.stop();
});

describe(`a reclaim pass over ${desktops} claimed desktops`, () => {
  it('with nothing to do makes one list request and no writes', async () => {
    clock.advance(60_000);
    await timedPass(); // warm-up
    vdi.context.cluster.requestCounts.clear();
    const times: number[] = [];
    for (let pass = 0; pass < timedPasses; pass += 1) {
      const { result, ms } = await timedPass();
      expect(result).toMatchObject({ desktops, renewed: 0, reclaimed: 0, errors: [] });
      times.push(ms);
    }
    times.sort((a, b) => a - b);
    const perPass = vdi.context.cluster.requestTotal / timedPasses;
    console.info(
      `nothing to do: ${perPass} requests per pass (${requestsByVerb()} over ${timedPasses} passes); ` +
        `wall time median ${times[timedPasses / 2]?.toFixed(1)} ms, min ${times[0]?.toFixed(1)} ms, max ${times.at(-1)?.toFixed(1)} ms`,
    );
    expect(perPass).toBe(1);
  });

  it('renewing every Lease writes each once', async () => {
    clock.advance(20 * 60_000);
    vdi.context.cluster.requestCounts.clear();
    const { result, ms } = await timedPass();
    console.info(
      `renewing all: ${result.renewed} renewed with ${vdi.context.cluster.requestTotal} requests (${requestsByVerb()}) in ${Math.round(ms)} ms`,
    );
    expect(result).toMatchObject({ renewed: desktops, errors: [] });
    expect(vdi.context.cluster.requestCounts.get('update')).toBe(desktops);
  });
});
