import type { VdiContext } from '../../../src/context.js';
import { leaseMemberLabel, leasePoolLabel, poolLabel } from '../../../src/keys.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import type { VirtualMachineInstance, VmDevices } from '../../../src/kubevirt-types.js';
import type { LocalCluster } from '../../../src/testing/local-cluster.js';
import { createTestNamespace, useLocalCluster } from '../../support/cluster.js';

/**
 * Starts a control plane whose simulator hands out VMI addresses from a range of this file's own, so a listener
 * on a VMI's address and port 3389 can never meet another test file's VM.
 */
export function useConnectCluster(ipRange: string): () => LocalCluster {
  return useLocalCluster({ simulator: { ipRange } });
}

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
        spec: { domain: { devices: { interfaces: [{ name: 'default', masquerade: {} }], ...devices } } },
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

/** Waits for the simulator to bring the member's VMI to Running with an address. */
export async function waitForRunningVmi(
  kube: KubeCluster,
  namespace: string,
  member: string,
): Promise<VirtualMachineInstance> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    const vmi = await kube.getVmi(namespace, member);
    if (vmi?.status?.phase === 'Running' && vmi.status.interfaces?.[0]?.ipAddress) return vmi;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the VMI of ${member} never ran`);
}

/** Waits until the member has no VMI any more. */
export async function waitForNoVmi(kube: KubeCluster, namespace: string, member: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt += 1) {
    if ((await kube.getVmi(namespace, member)) === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the VMI of ${member} never went away`);
}
