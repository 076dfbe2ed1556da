// Creating pools of 1, 3, 6 and 12 members on KubeVirt's own controllers: from one snapshot of the golden VM (an
// identity that may make VirtualMachineSnapshots) and from one snapshot per member's clone (an identity that may
// not, which takes the old path), in one run, with their ratio and the machine's load average.
// Run: npx vitest run -c bench/vitest.config.ts bench/pool-snapshot.bench.ts
import { loadavg } from 'node:os';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { VdiContext } from '../src/context.js';
import { type LocalCluster, startLocalCluster } from '../src/testing/local-cluster.js';
import { createVdi } from '../src/vdi.js';
import { timePoolCreate } from './support/pool-create-timing.js';

const namespace = 'bench-pool-snapshot';
const sizes = [1, 3, 6, 12];
const concurrency = 4;

let cluster: LocalCluster | undefined;
let shared: VdiContext;
let perMember: VdiContext;

// what a pool create needs, without virtualmachinesnapshots
const rulesWithoutSnapshots = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['*'] },
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachines', 'virtualmachineinstances'], verbs: ['*'] },
  { apiGroups: ['clone.kubevirt.io'], resources: ['virtualmachineclones'], verbs: ['*'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['*'] },
];

beforeAll(async () => {
  cluster = await startLocalCluster();
  await cluster.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } });
  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: 'no-snapshots' }, rules: rulesWithoutSnapshots },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'no-snapshots' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-snapshots' },
      subjects: [{ kind: 'User', name: 'no-snapshots', apiGroup: 'rbac.authorization.k8s.io' }],
    },
  });
  shared = createVdi({ kubeConfig: cluster.kubeConfig, namespace }).context;
  perMember = createVdi({ kubeConfig: cluster.userKubeConfig('no-snapshots'), namespace }).context;
  await shared.cluster.createVm(namespace, {
    metadata: { name: 'golden', labels: { app: 'desktop' } },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
    },
  });
  await timePoolCreate(shared, 'warmup', 2, concurrency);
}, 900_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('creating pools of 1, 3, 6 and 12 members on KubeVirt’s own controllers', () => {
  it('from one snapshot of the golden VM, and from a snapshot per member', async () => {
    for (const size of sizes) {
      const load = loadavg()[0]?.toFixed(1);
      const before = await timePoolCreate(perMember, `per-member-${size}`, size, concurrency);
      const after = await timePoolCreate(shared, `shared-${size}`, size, concurrency);
      console.info(
        `pool create ${size}: a snapshot per member ${Math.round(before.ms)} ms, one snapshot ` +
          `${Math.round(after.ms)} ms, ratio ${(before.ms / after.ms).toFixed(2)}× (load average ${load})`,
      );
    }
  });
});
