import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimDesktop } from '../../../src/claims/claim-desktop.js';
import type { VdiContext } from '../../../src/context.js';
import { VdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { resizePool } from '../../../src/pools/pool-service.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The adapter with ordering and faults a test arms: a barrier on pool Lease lists, and failing calls. */
class OrderedCluster extends KubeCluster {
  /** The next `count` pool Lease lists wait for each other, so their claims plan from the same read. */
  barrier: { count: number; arrived: number; release: () => void; all: Promise<void> } | undefined;
  /** Member and VMI reads fail once a member Lease, or the member's presentation, was written, as without `get`. */
  failReadsAfter: 'lease' | 'presentation' | undefined;
  private written = new Set<'lease' | 'presentation'>();
  /** The next create of a member Lease fails, as a process that dies just before it would. */
  failNextMemberLeaseCreate = false;
  /** Runs once before the next create of a member Lease, as another process acting in between. */
  beforeNextMemberLeaseCreate: (() => Promise<void>) | undefined;

  arm(count: number): void {
    let release = () => {};
    const all = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.barrier = { count, arrived: 0, release, all };
  }

  override async listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]> {
    const leases = await super.listLeases(namespace, labelSelector);
    const barrier = this.barrier;
    if (barrier && labelSelector) {
      barrier.arrived += 1;
      if (barrier.arrived === barrier.count) {
        this.barrier = undefined;
        barrier.release();
      }
      await barrier.all;
    }
    return leases;
  }

  override async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const isMemberLease = lease.metadata.labels?.['corral.dev/vdi-member'] !== undefined;
    const before = isMemberLease ? this.beforeNextMemberLeaseCreate : undefined;
    this.beforeNextMemberLeaseCreate = isMemberLease ? undefined : this.beforeNextMemberLeaseCreate;
    await before?.();
    if (isMemberLease && this.failNextMemberLeaseCreate) {
      this.failNextMemberLeaseCreate = false;
      throw new VdiError('CLUSTER_UNAVAILABLE', 'the process died here');
    }
    const created = await super.createLease(namespace, lease);
    if (isMemberLease) this.written.add('lease');
    return created;
  }

  override async patchVm(...args: Parameters<KubeCluster['patchVm']>) {
    const patched = await super.patchVm(...args);
    this.written.add('presentation');
    return patched;
  }

  private get readsFail(): boolean {
    return this.failReadsAfter !== undefined && this.written.has(this.failReadsAfter);
  }

  override async getVm(namespace: string, name: string): Promise<VirtualMachine | undefined> {
    if (this.readsFail) throw new VdiError('FORBIDDEN', 'no get on VMs');
    return await super.getVm(namespace, name);
  }

  override async getVmi(namespace: string, name: string): Promise<VirtualMachineInstance | undefined> {
    if (this.readsFail) throw new VdiError('FORBIDDEN', 'no get on VMIs');
    return await super.getVmi(namespace, name);
  }
}

async function setUp(prefix: string, size: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const kube = new OrderedCluster(cluster().kubeConfig);
  // the simulator's status writes would otherwise race the claim's presentation write
  await waitFor(
    async () => (await kube.listVms(namespace)).every((vm) => vm.status?.printableStatus === 'Stopped'),
    { describe: 'the members to report Stopped' },
  );
  const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
  ctx.backends.vm = createVmBackend(ctx);
  const claim = (identity: string) =>
    claimDesktop(ctx, { pool: 'devpool', identity }, { actor: undefined, order: 'random' });
  const holders = async () =>
    (await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool'))
      .filter((lease) => lease.metadata.labels?.['corral.dev/vdi-member'] !== undefined)
      .map((lease) => [lease.metadata.labels?.['corral.dev/vdi-member'], lease.spec.holderIdentity])
      .sort();
  return { namespace, vdi, kube, ctx, claim, holders };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('claims of one identity at once against the real apiserver', () => {
  it('gives two claims of one identity that plan from the same read one member and one session', async () => {
    const { kube, claim, holders } = await setUp('twin', 5);
    // the two plans pick different members: the lowest and the highest
    vi.spyOn(Math, 'random').mockReturnValueOnce(0).mockReturnValueOnce(0.99);
    kube.arm(2);
    const [first, second] = await Promise.all([claim('alice'), claim('alice')]);
    expect(second.member).toBe(first.member);
    expect(second.sessionId).toBe(first.sessionId);
    expect(await holders()).toEqual([[first.member, 'alice']]);
  });

  it('recovers the member a claim chose before it died between its two Lease writes', async () => {
    const { namespace, kube, claim, holders } = await setUp('crash', 5);
    vi.spyOn(Math, 'random').mockReturnValueOnce(0.99);
    kube.failNextMemberLeaseCreate = true;
    await expect(claim('alice')).rejects.toThrow(/the process died here/);
    expect(await holders()).toEqual([]);
    // what is left is only the claimant Lease, which no listing of claims takes for one
    const [claimant] = await kube.listLeases(namespace);
    expect(claimant?.metadata.name).toMatch(/^corral-vdi-claimant-[0-9a-z]{10}$/);
    expect(claimant?.metadata.annotations?.['corral.dev/vdi-claiming']).toBe('devpool-5');
    expect(await kube.listLeases(namespace, 'corral.dev/vdi-pool')).toEqual([]);

    vi.spyOn(Math, 'random').mockReturnValue(0);
    const recovered = await claim('alice');
    expect(recovered.member).toBe('devpool-5');
    expect(await holders()).toEqual([['devpool-5', 'alice']]);
    const left = (await kube.listLeases(namespace)).map((lease) => lease.metadata.name);
    expect(left).toEqual(['corral-vdi-devpool-5']);
  });

  it('takes over a claimant Lease naming a member another identity holds', async () => {
    const { kube, claim, holders } = await setUp('takeover', 2);
    vi.spyOn(Math, 'random').mockReturnValueOnce(0);
    kube.failNextMemberLeaseCreate = true;
    await expect(claim('alice')).rejects.toThrow(/the process died here/);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const bob = await claim('bob');
    expect(bob.member).toBe('devpool-1');

    const alice = await claim('alice');
    expect(alice.member).toBe('devpool-2');
    expect(await holders()).toEqual([
      ['devpool-1', 'bob'],
      ['devpool-2', 'alice'],
    ]);
  });
});

describe('a claim racing a shrink', () => {
  it('gives back a Lease it won on a member a shrink removed meanwhile, and takes another member', async () => {
    const { namespace, vdi, kube, claim, holders } = await setUp('shrunk', 2);
    vi.spyOn(Math, 'random').mockReturnValueOnce(0.99);
    kube.beforeNextMemberLeaseCreate = async () => {
      await resizePool(vdi.context, { name: 'devpool', size: 1 });
      await waitFor(async () => (await kube.getVm(namespace, 'devpool-2')) === undefined, {
        describe: 'devpool-2 to be gone',
      });
    };
    const desktop = await claim('alice');
    expect(desktop.member).toBe('devpool-1');
    expect(await holders()).toEqual([['devpool-1', 'alice']]);
    expect((await kube.listLeases(namespace)).map((lease) => lease.metadata.name)).toEqual([
      'corral-vdi-devpool-1',
    ]);
  });
});

describe('a claim that did its work', () => {
  it('reports the desktop it holds even when reading the member back fails', async () => {
    const { kube, claim, holders } = await setUp('readback', 1);
    kube.failReadsAfter = 'presentation';
    const desktop = await claim('alice');
    expect(desktop).toMatchObject({ member: 'devpool-1', owner: 'alice', retried: false });
    expect(desktop.sessionId).not.toBe('');
    expect(desktop.claimedAt).toBeDefined();
    expect(await holders()).toEqual([['devpool-1', 'alice']]);
  });

  it('gives the Lease back and fails, holding nothing, when it cannot read the member it won before handing it out', async () => {
    const { namespace, kube, claim, holders } = await setUp('readwon', 1);
    kube.failReadsAfter = 'lease';
    await expect(claim('alice')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await holders()).toEqual([]);
    expect(await kube.listLeases(namespace)).toEqual([]);
  });
});
