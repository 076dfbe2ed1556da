import { afterEach, describe, expect, it } from 'vitest';
import { assignedToKey as assignedTo, sessionIdAnnotation as sessionOf } from '../../../src/keys.js';
import { KubeCluster, type ListOptions } from '../../../src/kube/cluster.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();
const stopCaches: Array<() => void> = [];
afterEach(() => {
  for (const stop of stopCaches.splice(0)) stop();
});

/**
 * A pool whose members refuse to start, so a claim holds a stopped member (its start fails after the claim). The
 * refusal is final (422), as a webhook's: a 5xx would be retried for seconds before the claim answers.
 */
async function setUp(prefix: string, members: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', members);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const kube = vdi.context.cluster;
  for (const vm of await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool')) {
    await kube.patchVm(namespace, vm.metadata.name ?? '', {
      metadata: { annotations: { [simulatorAnnotations.failStart]: '422 held back by the test' } },
    });
  }
  return { namespace, vdi, kube };
}

async function startCaches(vdi: Vdi, namespace: string) {
  vdi.startCaches([namespace]);
  stopCaches.push(() => vdi.stopCaches());
  await vdi.waitForCacheSync();
}

/** A claim's end that left its copy behind: its Lease deleted, as by a release whose claim's take-back then failed. */
async function leaveCopy(vdi: Vdi, namespace: string, identity: string) {
  const claim = await vdi.claim({ pool: 'devpool', identity });
  await vdi.context.cluster.deleteLease(namespace, `corral-vdi-${claim.member}`, {});
  return claim;
}

describe('a pass over members whose presentation copy outlived its claim', () => {
  it('removes a copy no claim names from a stopped member, keeps the copies of live claims and a v0.6.0 assignment', async () => {
    const { namespace, vdi, kube } = await setUp('left-copy', 4);
    const bob = await vdi.claim({ pool: 'devpool', identity: 'bob' });
    const carol = await vdi.claim({ pool: 'devpool', identity: 'carol' });
    // last, so that no claim of the test takes the stopped member alice's copy was left on: it is free
    const left = await leaveCopy(vdi, namespace, 'alice');
    // bob's member still shows dave, whose claim of it ended before bob's: dave's take-back failed
    await kube.patchVm(namespace, bob.member, {
      metadata: { annotations: { [assignedTo]: 'dave', [sessionOf]: 'an-ended-session' } },
    });
    const legacy = (await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool')).find(
      (vm) => !vm.metadata.annotations?.[assignedTo],
    );
    const legacyName = legacy?.metadata.name ?? '';
    await kube.patchVm(namespace, legacyName, { metadata: { annotations: { [assignedTo]: 'erin' } } });
    await startCaches(vdi, namespace);

    const result = await createSessionEngine(vdi.context, { namespaces: [namespace] }).runPass();
    expect(result).toMatchObject({ cleared: 2, errors: [] });
    const shown = async (member: string) =>
      (await kube.getVm(namespace, member))?.metadata.annotations?.[assignedTo];
    expect(await shown(left.member)).toBeUndefined();
    expect(await shown(bob.member)).toBeUndefined();
    expect(await shown(carol.member)).toBe('carol');
    expect(await shown(legacyName)).toBe('erin');
  });

  it('keeps the copy on a running member with no Lease, which its holder claims back', async () => {
    const { namespace, vdi, kube } = await setUp('left-copy-orphan', 1);
    const [member] = await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool');
    const name = member?.metadata.name ?? '';
    await kube.patchVm(namespace, name, {
      metadata: { annotations: { [simulatorAnnotations.failStart]: null } },
    });
    const orphan = await leaveCopy(vdi, namespace, 'alice');
    expect(orphan.startError).toBeUndefined();
    await startCaches(vdi, namespace);
    await waitFor(() => kube.listVms(namespace, 'corral.dev/vdi-pool=devpool', { cached: true }), {
      describe: 'the caches to see the member run',
      until: (vms) => vms.every((vm) => vm.status?.printableStatus === 'Running'),
    });

    const result = await createSessionEngine(vdi.context, { namespaces: [namespace] }).runPass();
    expect(result).toMatchObject({ cleared: 0, errors: [] });
    expect((await kube.getVm(namespace, name))?.metadata.annotations?.[assignedTo]).toBe('alice');
    expect(await vdi.claim({ pool: 'devpool', identity: 'alice' })).toMatchObject({
      member: name,
      adopted: true,
    });
  });

  it('keeps the copy of a claim that wrote its Lease and copy after the pass listed the Leases', async () => {
    const { namespace, vdi } = await setUp('left-copy-race', 1);
    const left = await leaveCopy(vdi, namespace, 'alice');
    const other = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });

    /** The adapter, whose first pool Lease list is followed by bob's claim of the member before it answers. */
    class ClaimAfterList extends KubeCluster {
      claimed: string | undefined;
      override async listLeases(ns: string, labelSelector?: string, options?: ListOptions) {
        const leases = await super.listLeases(ns, labelSelector, options);
        if (this.claimed === undefined && labelSelector === 'corral.dev/vdi-pool') {
          const bob = await other.claim({ pool: 'devpool', identity: 'bob' });
          this.claimed = bob.sessionId;
          await waitFor(() => this.listVms(ns, 'corral.dev/vdi-pool', { cached: true }), {
            describe: "the caches to see bob's copy",
            until: (vms) => vms.some((vm) => vm.metadata.annotations?.[sessionOf] === bob.sessionId),
          });
        }
        return leases;
      }
    }
    const kube = new ClaimAfterList(cluster().kubeConfig);
    const ctx = { ...vdi.context, cluster: kube, backends: {} } as typeof vdi.context;
    ctx.backends.vm = createVmBackend(ctx);
    kube.startCaches([namespace], { clock: ctx.clock });
    stopCaches.push(() => kube.stopCaches());
    await kube.waitForCacheSync();

    const result = await createSessionEngine(ctx, { namespaces: [namespace] }).runPass();
    expect(result.errors).toEqual([]);
    expect(kube.claimed).toBeDefined();
    expect(result).toMatchObject({ cleared: 0, errors: [] });
    const vm = await kube.getVm(namespace, left.member);
    expect(vm?.metadata.annotations).toMatchObject({ [assignedTo]: 'bob', [sessionOf]: kube.claimed });
  });
});
