// Creating a 20-member pool against the local control plane and the KubeVirt simulator: wall time and apiserver
// requests with one clone at a time and with the default concurrency, and their ratio, from one run. Twice: with
// the simulator's instant clones, where the machine's CPU is the limit, and with clones whose phases last 500 ms
// each, closer to a real clone that waits on storage.
// Run: npx vitest run -c bench/vitest.config.ts bench/pool-create.bench.ts
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { VdiContext } from '../src/context.js';
import { defaultCloneConcurrency } from '../src/pools/pool-member-factory.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { createVdi, type Vdi } from '../src/vdi.js';
import { SlowCloneCluster, timePoolCreate } from './support/pool-create-timing.js';

const size = 20;
const namespace = 'bench-pools';

const slowPhaseMs = 500;

let cluster: LocalCluster | undefined;
let vdi: Vdi;

function timedCreate(ctx: VdiContext, name: string, concurrency: number) {
  return timePoolCreate(ctx, name, size, concurrency);
}

async function compare(ctx: VdiContext, label: string): Promise<void> {
  const serial = await timedCreate(ctx, 'serial', 1);
  const parallel = await timedCreate(ctx, 'parallel', defaultCloneConcurrency);
  console.info(
    `${label}: ${size} members, concurrency 1: ${Math.round(serial.ms)} ms, ${serial.requests} requests; ` +
      `concurrency ${defaultCloneConcurrency}: ${Math.round(parallel.ms)} ms, ${parallel.requests} requests; ` +
      `ratio ${(serial.ms / parallel.ms).toFixed(2)}×`,
  );
}

beforeAll(async () => {
  cluster = await startLocalCluster();
  await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } });
  vdi = createVdi({ kubeConfig: cluster.kubeConfig, namespace });
  await vdi.context.cluster.createVm(namespace, {
    metadata: { name: 'golden', labels: { app: 'desktop' } },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
    },
  });
  await timedCreate(vdi.context, 'warmup', defaultCloneConcurrency);
}, 900_000);

afterAll(async () => {
  await cluster?.stop();
});

describe(`creating a ${size}-member pool`, () => {
  it('with the simulator’s instant clones', async () => {
    await compare(vdi.context, 'instant clones');
  });

  it(`with clone phases of ${slowPhaseMs} ms`, async () => {
    const kubeConfig = cluster?.kubeConfig;
    if (!kubeConfig) throw new Error('the local cluster is not started');
    await compare(
      { ...vdi.context, cluster: Object.assign(new SlowCloneCluster(kubeConfig), { phaseMs: slowPhaseMs }) },
      `${slowPhaseMs} ms clone phases`,
    );
  });
});
