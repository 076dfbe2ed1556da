// Warm spares (`npm run bench`): how long a claim takes until its desktop runs, in a pool without spares and in one
// whose keeper keeps every member warm, on the same local control plane with the simulator's start delay set to a
// few seconds on every member. Prints the two means and their ratio. Sizes: BENCH_SPARE_CLAIMS (5),
// BENCH_START_DELAY_MS (3000).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeCluster } from '../src/kube/cluster.js';
import { keepPoolSpares } from '../src/spares/keep-spares.js';
import { simulatorAnnotations } from '../src/testing/kubevirt/fault-knobs.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { waitFor } from '../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../src/vdi.js';
import { sizeFromEnv } from './support/measure.js';
import { createNamespace, seedMembers } from './support/seed.js';

const claims = sizeFromEnv('BENCH_SPARE_CLAIMS', 5);
const startDelayMs = sizeFromEnv('BENCH_START_DELAY_MS', 3000);
const pool = 'benchpool';

let cluster: LocalCluster | undefined;

function kubeConfig() {
  if (!cluster) throw new Error('the local cluster is not started');
  return cluster.kubeConfig;
}

/** A pool of `claims` stopped members in a fresh namespace, each starting only `startDelayMs` after it is asked to. */
async function slowPool(name: string): Promise<{ namespace: string; vdi: Vdi; kube: KubeCluster }> {
  await createNamespace(kubeConfig(), name);
  const kube = new KubeCluster(kubeConfig());
  const members = await seedMembers(kube, name, pool, claims);
  for (const member of members) {
    await kube.patchVm(name, member, {
      metadata: { annotations: { [simulatorAnnotations.startDelayMs]: String(startDelayMs) } },
    });
  }
  return { namespace: name, vdi: createVdi({ kubeConfig: kubeConfig(), namespace: name }), kube };
}

/** Claims one member for each of `claims` users in turn; the time from each claim until its VM runs. */
async function claimToRunning({ vdi, kube, namespace }: Awaited<ReturnType<typeof slowPool>>) {
  const times: number[] = [];
  let warm = 0;
  for (let index = 1; index <= claims; index += 1) {
    const started = performance.now();
    const claimed = await vdi.claim({ pool, identity: `user-${index}@example.com` });
    await waitFor(
      async () => (await kube.getVm(namespace, claimed.member))?.status?.printableStatus === 'Running',
      {
        describe: `${claimed.member} to run`,
        timeoutMs: startDelayMs + 60_000,
      },
    );
    times.push(performance.now() - started);
    if (claimed.warm) warm += 1;
  }
  return { meanMs: times.reduce((sum, ms) => sum + ms, 0) / times.length, warm };
}

beforeAll(async () => {
  cluster = await startLocalCluster();
}, 900_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('warm spares', () => {
  it(`claim to running for ${claims} claims, start delay ${startDelayMs} ms: without spares and with minReady ${claims}`, async () => {
    const cold = await slowPool('bench-spares-cold');
    const without = await claimToRunning(cold);

    const warmPool = await slowPool('bench-spares-warm');
    await warmPool.vdi.setPool({ name: pool, minReady: claims });
    await keepPoolSpares(warmPool.vdi.context, { name: pool });
    await waitFor(
      async () =>
        (await warmPool.kube.listVms(warmPool.namespace, `corral.dev/vdi-pool=${pool}`)).every(
          (vm) => vm.status?.printableStatus === 'Running',
        ),
      { describe: 'every spare to run', timeoutMs: startDelayMs + 60_000 },
    );
    const spares = await claimToRunning(warmPool);

    const ratio = without.meanMs / spares.meanMs;
    console.table([
      {
        pool: 'no spares',
        'mean claim to running (ms)': Math.round(without.meanMs),
        'warm claims': without.warm,
      },
      {
        pool: `minReady ${claims}`,
        'mean claim to running (ms)': Math.round(spares.meanMs),
        'warm claims': spares.warm,
      },
    ]);
    console.info(`warm spares: claim to running ${Math.round(ratio * 10) / 10} times faster with spares`);
    expect(spares.warm).toBe(claims);
    expect(without.warm).toBe(0);
  });
});
