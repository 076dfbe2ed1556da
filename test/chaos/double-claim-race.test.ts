import { expect, it } from 'vitest';
import { claimDesktop } from '../../src/claims/claim-desktop.js';
import type { VdiContext } from '../../src/context.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import type { LeaseObject } from '../../src/kube-objects.js';
import { createTestClock } from '../../src/testing/test-clock.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

/** Holds a claim between its read of the pool's Leases and its take of the identity's claimant Lease. */
class GatedCluster extends KubeCluster {
  private readonly opened: Promise<void>;
  open!: () => void;
  readonly listed: Promise<void>;
  private reportListed!: () => void;

  constructor(...args: ConstructorParameters<typeof KubeCluster>) {
    super(...args);
    this.opened = new Promise((resolve) => {
      this.open = resolve;
    });
    this.listed = new Promise((resolve) => {
      this.reportListed = resolve;
    });
  }

  override async listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]> {
    const leases = await super.listLeases(namespace, labelSelector);
    this.reportListed();
    return leases;
  }

  override async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    if (lease.metadata.name?.startsWith('corral-vdi-claimant-')) await this.opened;
    return await super.createLease(namespace, lease);
  }
}

// Found by the chaos storm (seed 7, di on alpha-4 and alpha-5): of two claims of one identity at once, the second
// read the pool's Leases before the first wrote its member and the claimant Lease after the first deleted it, so
// it took a second member. Now a claim reads the identity's own claims once it holds the claimant Lease.
// A self-service claim picks at random, an administrator's assign the lowest free member: both go the same path.
it.each([
  { call: 'claim', order: 'random' },
  { call: 'assign', order: 'lowest' },
] as const)(
  'gives two $call calls of one identity at once the same member when the first finishes between the other’s reads',
  async ({ order }) => {
    const namespace = await createTestNamespace(cluster(), 'double-claim');
    const { kubeConfig } = cluster();
    const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
    // ed is served by another process, so what di's claims note about members here is only their own doing
    const elsewhere = createVdi({ kubeConfig, namespace, clock: createTestClock() });
    await createPoolMembers(cluster(), namespace, 'dbl', 2);
    expect((await elsewhere.assign({ pool: 'dbl', identity: 'ed' })).member).toBe('dbl-1');

    const gated = new GatedCluster(kubeConfig);
    const ctx: VdiContext = { ...vdi.context, cluster: gated };
    const second = claimDesktop(ctx, { pool: 'dbl', identity: 'di' }, { actor: undefined, order });
    // The second claim saw dbl-1 held by ed; now ed lets it go and the first claim of di takes it.
    await gated.listed;
    await elsewhere.release({ member: 'dbl-1', identity: 'ed' });
    // a member still going down is passed over: the first claim, planning from the watch cache, must find dbl-1 free
    const kube = vdi.context.cluster;
    await waitFor(
      async () => {
        const [vms, vmis] = await Promise.all([
          kube.listVms(namespace, 'corral.dev/vdi-pool=dbl', { cached: true }),
          kube.listVmis(namespace, { cached: true }),
        ]);
        const stopped = vms.find((vm) => vm.metadata.name === 'dbl-1')?.status?.printableStatus === 'Stopped';
        return stopped && vmis.every((vmi) => vmi.metadata.name !== 'dbl-1');
      },
      { describe: "the watch cache to show dbl-1 stopped and ed's instance gone" },
    );
    const first = await vdi.assign({ pool: 'dbl', identity: 'di' });
    expect(first.member).toBe('dbl-1');
    gated.open();

    expect(await second).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    const held = await new KubeCluster(kubeConfig).listLeases(namespace, 'corral.dev/vdi-pool=dbl');
    expect(held.map((lease) => lease.spec.holderIdentity)).toEqual(['di']);
  },
);
