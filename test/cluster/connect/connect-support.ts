import type { VdiContext } from '../../../src/context.js';
import { leaseMemberLabel, leasePoolLabel, poolLabel } from '../../../src/keys.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import type { VmDevices } from '../../../src/kubevirt-types.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createTestNamespace } from '../../support/cluster.js';

export const createNamespace = createTestNamespace;

/** Creates a stopped pool member with the given domain devices. */
export async function createMember(
  kube: KubeCluster,
  namespace: string,
  name: string,
  devices: VmDevices = {},
): Promise<void> {
  await kube.createVm(namespace, {
    metadata: { name, labels: { [poolLabel]: 'devpool' } },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: {
            memory: { guest: '128Mi' },
            devices: { interfaces: [{ name: 'default', masquerade: {} }], ...devices },
          },
          // KubeVirt's admission refuses an interface without a network of its name
          networks: [{ name: 'default', pod: {} }],
        },
      },
    },
  });
}

/** Writes a claim Lease by hand, as a claim would: held by `holder` since `now`, for an hour. */
export async function createClaimLease(
  ctx: VdiContext,
  namespace: string,
  member: string,
  holder: string,
): Promise<void> {
  const now = ctx.clock.now().toISOString();
  await ctx.cluster.createLease(namespace, {
    metadata: {
      name: `corral-vdi-${member}`,
      labels: { [leasePoolLabel]: 'devpool', [leaseMemberLabel]: member },
    },
    spec: { holderIdentity: holder, acquireTime: now, renewTime: now, leaseDurationSeconds: 3600 },
  });
}

/** Waits until the member has no VMI any more. */
export async function waitForNoVmi(kube: KubeCluster, namespace: string, member: string): Promise<void> {
  await waitFor(() => kube.getVmi(namespace, member), {
    describe: `the VMI of ${member} to go away`,
    until: (found) => found === undefined,
  });
}
