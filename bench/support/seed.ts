import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  leaseDurationSeconds,
  leaseMemberLabel,
  leasePoolLabel,
  poolLabel,
  sessionIdAnnotation,
} from '../../src/keys.js';
import type { KubeCluster } from '../../src/kube/cluster.js';
import { inParallel } from './measure.js';

const seedConcurrency = 32;

/** Creates a namespace. */
export async function createNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
}

/** Creates `size` stopped member VMs `<pool>-1` … `<pool>-<size>`. */
export async function seedMembers(
  kube: KubeCluster,
  namespace: string,
  pool: string,
  size: number,
): Promise<string[]> {
  const names = Array.from({ length: size }, (_, index) => `${pool}-${index + 1}`);
  await inParallel(size, seedConcurrency, async (index) => {
    await kube.createVm(namespace, {
      metadata: { name: names[index] ?? '', labels: { [poolLabel]: pool } },
      spec: {
        runStrategy: 'Halted',
        template: { spec: { domain: { memory: { guest: '128Mi' }, devices: {} } } },
      },
    });
  });
  return names;
}

/**
 * Stops every running VM of `namespaces` and waits until KubeVirt has stopped them: the node offers 1,000 of each
 * KubeVirt device, as virt-handler does, so members that ran must give theirs back before others start.
 */
export async function stopVms(kube: KubeCluster, namespaces: readonly string[]): Promise<void> {
  for (const namespace of namespaces) {
    const running = (await kube.listVms(namespace)).filter((vm) => vm.spec.runStrategy !== 'Halted');
    await inParallel(running.length, seedConcurrency, async (index) => {
      await kube.patchVm(namespace, running[index]?.metadata.name ?? '', { spec: { runStrategy: 'Halted' } });
    });
  }
  await waitForSettledVms(kube, namespaces);
}

/** Creates `size` members, each claimed by its own user through a Lease renewed at `renewedAt(index)`. */
export async function seedClaimedDesktops(
  kube: KubeCluster,
  namespace: string,
  pool: string,
  size: number,
  renewedAt: (index: number) => string,
): Promise<void> {
  const names = await seedMembers(kube, namespace, pool, size);
  await inParallel(size, seedConcurrency, async (index) => {
    const member = names[index] ?? '';
    await kube.createLease(namespace, {
      metadata: {
        name: `corral-vdi-${member}`,
        labels: { [leasePoolLabel]: pool, [leaseMemberLabel]: member },
        annotations: { [sessionIdAnnotation]: `bench-session-${index + 1}` },
      },
      spec: {
        holderIdentity: `user-${index + 1}@example.com`,
        acquireTime: renewedAt(index),
        renewTime: renewedAt(index),
        leaseDurationSeconds,
      },
    });
  });
}

const settlePollMs = 200;
// KubeVirt's controller and the node's stand-in run a started VM's instance one after another: a large pool takes longer
const settleTimeoutMs = (vms: number) => 180_000 + 2_000 * vms;

/**
 * Waits until KubeVirt has caught up with every VM of `namespaces` (each shows Stopped or Running as
 * its run strategy asks), so that a measured run does not pay for the tail of the work before it.
 */
export async function waitForSettledVms(kube: KubeCluster, namespaces: readonly string[]): Promise<void> {
  let deadline: number | undefined;
  for (;;) {
    const vms = (await Promise.all(namespaces.map((namespace) => kube.listVms(namespace)))).flat();
    deadline ??= performance.now() + settleTimeoutMs(vms.length);
    const pending = vms.filter(
      (vm) => vm.status?.printableStatus !== (vm.spec.runStrategy === 'Always' ? 'Running' : 'Stopped'),
    );
    if (pending.length === 0) return;
    if (performance.now() > deadline) {
      throw new Error(
        `${pending.length} VMs of ${namespaces.join(', ')} never settled, such as ${pending[0]?.metadata.name}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, settlePollMs));
  }
}
