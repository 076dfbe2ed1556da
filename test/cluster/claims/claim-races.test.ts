import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimDesktop } from '../../../src/claims/claim-desktop.js';
import { claimantLeaseName, claimantStaleMs } from '../../../src/claims/claimant-lock.js';
import { releaseMember } from '../../../src/claims/release-desktop.js';
import type { VdiContext } from '../../../src/context.js';
import { VdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/kubevirt-types.js';
import { resizePool } from '../../../src/pools/pool-service.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import {
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';

const cluster = useSharedCluster();

/** The adapter with ordering and faults a test arms: a step run before a member Lease write, and failing calls. */
class OrderedCluster extends KubeCluster {
  /** Member and VMI reads fail from the start, or once the member's presentation was written, as without `get`. */
  failReadsAfter: 'start' | 'presentation' | undefined;
  private written = new Set<'lease' | 'presentation'>();
  /** The next create of a member Lease fails, as a process that dies just before it would. */
  failNextMemberLeaseCreate = false;
  /** Runs once before the next create of a member Lease, as another process acting in between. */
  beforeNextMemberLeaseCreate: (() => Promise<void>) | undefined;
  /** Runs once before the next list of an identity's own claims, as a slow apiserver would make it wait. */
  beforeOwnClaimsList: (() => Promise<void>) | undefined;

  override async listLeases(...args: Parameters<KubeCluster['listLeases']>) {
    const before = args[1]?.includes('corral.dev/vdi-holder-hash') ? this.beforeOwnClaimsList : undefined;
    if (before) this.beforeOwnClaimsList = undefined;
    await before?.();
    return await super.listLeases(...args);
  }

  /** Runs once before the next delete of a claimant Lease, as a slow apiserver would make it wait. */
  beforeNextClaimantDelete: (() => Promise<void>) | undefined;

  override async deleteLease(...args: Parameters<KubeCluster['deleteLease']>) {
    const before = args[1].startsWith('corral-vdi-claimant-') ? this.beforeNextClaimantDelete : undefined;
    if (before) this.beforeNextClaimantDelete = undefined;
    await before?.();
    return await super.deleteLease(...args);
  }

  /** Runs once after the first read of a member's Lease that follows its presentation write. */
  afterPresentedLeaseRead: (() => Promise<void>) | undefined;

  /** Runs once before the next read of a member's Lease, as another process acting in between. */
  beforeNextMemberLeaseRead: (() => Promise<void>) | undefined;

  override async getLease(namespace: string, name: string): Promise<LeaseObject | undefined> {
    const before = name.startsWith('corral-vdi-claimant-') ? undefined : this.beforeNextMemberLeaseRead;
    if (before) this.beforeNextMemberLeaseRead = undefined;
    await before?.();
    const lease = await super.getLease(namespace, name);
    const after = this.afterPresentedLeaseRead;
    if (after && this.written.has('presentation') && !name.startsWith('corral-vdi-claimant-')) {
      this.afterPresentedLeaseRead = undefined;
      await after();
    }
    return lease;
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

  /** Writes of a VM's run field (starts), counted as they are sent. */
  runFieldWrites = 0;
  /** Presentation writes the apiserver refused as written on an older read. */
  refusedPresentations = 0;
  /** Runs once before the next presentation write of a claim, as another process acting in between. */
  beforeNextPresentation: (() => Promise<void>) | undefined;

  override async patchVm(...args: Parameters<KubeCluster['patchVm']>) {
    const { metadata } = args[2] as { metadata?: { annotations?: Record<string, string | null> } };
    const presenting = metadata?.annotations?.['corral.dev/vdi-session-id'];
    const before = presenting ? this.beforeNextPresentation : undefined;
    if (before) this.beforeNextPresentation = undefined;
    await before?.();
    if (args[2].spec !== undefined) this.runFieldWrites += 1;
    const patched = await super.patchVm(...args).catch((error: unknown) => {
      if (presenting) this.refusedPresentations += 1;
      throw error;
    });
    this.written.add('presentation');
    return patched;
  }

  private get readsFail(): boolean {
    return (
      this.failReadsAfter === 'start' ||
      (this.failReadsAfter !== undefined && this.written.has(this.failReadsAfter))
    );
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

/** Another process's adapter, counting its reads of claimant Leases and its writes of members' Leases. */
class CountingCluster extends KubeCluster {
  claimantReads = 0;
  memberLeaseWrites = 0;

  override async getLease(namespace: string, name: string): Promise<LeaseObject | undefined> {
    if (name.startsWith('corral-vdi-claimant-')) this.claimantReads += 1;
    return await super.getLease(namespace, name);
  }

  override async createLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    if (lease.metadata.labels?.['corral.dev/vdi-member'] !== undefined) this.memberLeaseWrites += 1;
    return await super.createLease(namespace, lease);
  }

  override async replaceLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    if (lease.metadata.labels?.['corral.dev/vdi-member'] !== undefined) this.memberLeaseWrites += 1;
    return await super.replaceLease(namespace, lease);
  }
}

async function setUp(prefix: string, size: number) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', size);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const kube = new OrderedCluster(cluster().kubeConfig);
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

/** Whatever the claim returned holds its Lease, and no member runs without one. */
async function expectNoMemberRunsForNobody(
  kube: KubeCluster,
  namespace: string,
  claimed: { member: string; sessionId: string },
): Promise<void> {
  const leases = await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool');
  const sessions = leases.map((lease) => [
    lease.metadata.labels?.['corral.dev/vdi-member'],
    lease.metadata.annotations?.['corral.dev/vdi-session-id'],
  ]);
  expect(sessions).toContainEqual([claimed.member, claimed.sessionId]);
  for (const vm of await kube.listVms(namespace, 'corral.dev/vdi-pool=devpool')) {
    if (vm.spec.runStrategy !== 'Always') continue;
    expect(
      sessions.map(([member]) => member),
      `${vm.metadata.name} runs`,
    ).toContain(vm.metadata.name);
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('claims of one identity at once against the real apiserver', () => {
  it('gives two claims of one identity that plan from the same read one member and one session', async () => {
    const { claim, holders } = await setUp('twin', 5);
    // the two plans would pick different members, the lowest and the highest; the claims share one read of the pool
    vi.spyOn(Math, 'random').mockReturnValueOnce(0).mockReturnValueOnce(0.99);
    const [first, second] = await Promise.all([claim('alice'), claim('alice')]);
    expect(second.member).toBe(first.member);
    expect(second.sessionId).toBe(first.sessionId);
    expect(await holders()).toEqual([[first.member, 'alice']]);
  });

  it("lets no other claim of the identity write a member's Lease while one holds the claimant Lease", async () => {
    const { namespace, vdi, kube, claim, holders } = await setUp('turns', 5);
    // the second claim runs in another process, whose requests are counted apart
    const other = new CountingCluster(cluster().kubeConfig);
    const otherCtx: VdiContext = { ...vdi.context, cluster: other, backends: {} };
    otherCtx.backends.vm = createVmBackend(otherCtx);
    let second: Promise<{ member: string; sessionId: string }> | undefined;
    kube.beforeNextMemberLeaseCreate = async () => {
      second = claimDesktop(
        otherCtx,
        { pool: 'devpool', identity: 'alice' },
        { actor: undefined, order: 'random' },
      );
      // the second claim finds the claimant Lease held, and waits for it rather than write a member's Lease
      await waitFor(() => other.claimantReads, {
        describe: 'the second claim to read the held claimant Lease three times',
        until: (reads) => reads >= 3,
      });
      expect(other.memberLeaseWrites).toBe(0);
    };
    const first = await claim('alice');
    expect(await second).toMatchObject({ member: first.member, sessionId: first.sessionId });
    expect(await holders()).toEqual([[first.member, 'alice']]);
    expect((await kube.listLeases(namespace)).map((lease) => lease.metadata.name)).toEqual([
      `corral-vdi-${first.member}`,
    ]);
  });

  it('takes over a claimant Lease left by a process that died once it stayed unchanged for a while', async () => {
    const { namespace, kube, claim, holders } = await setUp('crash', 3);
    // what a claim that died after taking its turn leaves behind
    await kube.createLease(namespace, {
      metadata: { name: claimantLeaseName({ pool: 'devpool', identity: 'alice' }), namespace },
      spec: { holderIdentity: 'alice' },
    });
    const started = performance.now();
    const alice = await claim('alice');
    expect(performance.now() - started).toBeGreaterThanOrEqual(claimantStaleMs);
    expect(await holders()).toEqual([[alice.member, 'alice']]);
    expect((await kube.listLeases(namespace)).map((lease) => lease.metadata.name)).toEqual([
      `corral-vdi-${alice.member}`,
    ]);
  });

  it('deletes the claimant Lease it wrote again during a long turn, leaving none behind', async () => {
    const { namespace, kube, ctx, claim, holders } = await setUp('long-turn', 2);
    // the turn outlasts the bound after which it writes the claimant Lease again before its member's Lease, and
    // time moves on meanwhile, so that write changes the Lease
    kube.beforeOwnClaimsList = () =>
      new Promise<void>((resolve) => {
        setTimeout(resolve, claimantStaleMs / 4 + 200);
      }).then(() => (ctx.clock as TestClock).advance(1_000));
    const alice = await claim('alice');
    expect(await holders()).toEqual([[alice.member, 'alice']]);
    expect((await kube.listLeases(namespace)).map((lease) => lease.metadata.name)).toEqual([
      `corral-vdi-${alice.member}`,
    ]);
  });

  it('gives the claimant Lease back when its turn fails, so the next claim of the identity does not wait', async () => {
    const { namespace, kube, claim, holders } = await setUp('failed-turn', 2);
    kube.failNextMemberLeaseCreate = true;
    await expect(claim('alice')).rejects.toThrow(/the process died here/);
    expect(await kube.listLeases(namespace)).toEqual([]);
    const alice = await claim('alice');
    expect(await holders()).toEqual([[alice.member, 'alice']]);
  });
});

/** The adapter of another process whose Lease deletes wait until the test lets them go. */
class HeldDeleteCluster extends KubeCluster {
  private reached: () => void = () => {};
  readonly atDelete = new Promise<void>((resolve) => {
    this.reached = resolve;
  });
  private open: () => void = () => {};
  private readonly opened = new Promise<void>((resolve) => {
    this.open = resolve;
  });

  letDeletesGo(): void {
    this.open();
  }

  override async deleteLease(...args: Parameters<KubeCluster['deleteLease']>) {
    this.reached();
    await this.opened;
    return await super.deleteLease(...args);
  }
}

describe('a claim racing a release of itself', () => {
  it('neither presents itself nor starts its member when the release ran to the end between its read of the member and its write', async () => {
    const { namespace, kube, claim } = await setUp('start-after-release', 1);
    const other = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const sessions: string[] = [];
    kube.beforeNextPresentation = async () => {
      // the claim read its member; now a release of it (another tab of alice) runs to the end
      const [lease] = await kube.listLeases(namespace, 'corral.dev/vdi-pool=devpool');
      sessions.push(lease?.metadata.annotations?.['corral.dev/vdi-session-id'] ?? '');
      await other.release({ member: 'devpool-1', identity: 'alice' });
    };
    const alice = await claim('alice');
    // the first claim's write was refused, and it took the member again with a session of its own
    expect(kube.refusedPresentations).toBe(1);
    expect(sessions).toHaveLength(1);
    expect(alice.sessionId).not.toBe(sessions[0]);
    await expectNoMemberRunsForNobody(kube, namespace, alice);
    const vm = await kube.getVm(namespace, 'devpool-1');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-session-id']).toBe(alice.sessionId);
  });

  it('is refused when the release, held before its Lease delete, wrote its record on a member without a copy', async () => {
    const { namespace, vdi, kube, claim } = await setUp('present-mid-release', 1);
    const held = new HeldDeleteCluster(cluster().kubeConfig);
    const releaseCtx: VdiContext = { ...vdi.context, cluster: held, backends: {} };
    releaseCtx.backends.vm = createVmBackend(releaseCtx);
    let releasing: Promise<unknown> | undefined;
    kube.beforeNextPresentation = async () => {
      // a release of the claim runs up to its Lease delete: the member carries no copy yet, and is stopped
      releasing = releaseMember(releaseCtx, {
        namespace,
        member: 'devpool-1',
        actor: 'alice',
        asAdmin: false,
      });
      await held.atDelete;
    };
    const claimed = claim('alice');
    await waitFor(() => kube.refusedPresentations, {
      describe: "the claim's presentation to be refused",
      until: (refused) => refused >= 1,
    });
    held.letDeletesGo();
    await releasing;
    const alice = await claimed;
    await expectNoMemberRunsForNobody(kube, namespace, alice);
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

describe("a claim renewing the identity's claim while its member is made again", () => {
  it('keeps the claim when the member is deleted under its presentation write, and renews it once the member is back', async () => {
    const { namespace, kube, claim, holders } = await setUp('renew-remade', 2);
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const first = await claim('alice');
    // as a second reset of a takeover does: the member's VM deleted and cloned again under the same name
    const other = new KubeCluster(cluster().kubeConfig);
    kube.beforeNextPresentation = async () => {
      await other.deleteVm(namespace, first.member);
      await waitFor(async () => (await other.getVm(namespace, first.member)) === undefined, {
        describe: `${first.member} to be gone`,
      });
      setTimeout(() => {
        void other.createVm(namespace, stoppedVm(first.member, { 'corral.dev/vdi-pool': 'devpool' }));
      }, 300);
    };
    const again = await claim('alice');
    expect(again).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    expect(await holders()).toEqual([[first.member, 'alice']]);
  });
});

describe("a second claim of the identity finishing a takeover's reset", () => {
  it('leaves the member alone once the first one finished the reset and cleared the mark meanwhile', async () => {
    const { namespace, kube, claim } = await setUp('reset-once', 1);
    const first = await claim('alice');
    const leaseName = `corral-vdi-${first.member}`;
    const other = new KubeCluster(cluster().kubeConfig);
    // as a takeover leaves it before its reset: the Lease carries the reset-due mark of its session
    const read = (await other.getLease(namespace, leaseName)) as LeaseObject;
    const marked = { ...read.metadata.annotations, 'corral.dev/vdi-reset-due': first.sessionId };
    await other.replaceLease(namespace, { ...read, metadata: { ...read.metadata, annotations: marked } });
    // the first claim finishes the reset and clears the mark after the second planned its own reset
    kube.beforeNextMemberLeaseRead = async () => {
      const current = (await other.getLease(namespace, leaseName)) as LeaseObject;
      const { 'corral.dev/vdi-reset-due': _cleared, ...annotations } = current.metadata.annotations ?? {};
      await other.replaceLease(namespace, { ...current, metadata: { ...current.metadata, annotations } });
    };
    const stops = vi.spyOn(kube, 'stopVm');
    const again = await claim('alice');
    expect(again).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    expect(stops).not.toHaveBeenCalled();
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

  it('fails, holding nothing and writing no Lease, when it cannot read the member it is about to take', async () => {
    const { namespace, kube, claim, holders } = await setUp('readwon', 1);
    kube.failReadsAfter = 'start';
    await expect(claim('alice')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await holders()).toEqual([]);
    expect(await kube.listLeases(namespace)).toEqual([]);
  });

  it('fails as cleanly when that read fails before the claimant Lease is deleted, leaving no failure unhandled', async () => {
    const { namespace, kube, ctx, claim, holders } = await setUp('readwon-early', 1);
    const vm = createVmBackend(ctx);
    // a backend that reads the member at once, without waiting for the caches, as the container one does
    ctx.backends.vm = {
      ...vm,
      readMember: async () => {
        throw new VdiError('FORBIDDEN', 'pods "c-1" is forbidden: cannot get');
      },
    };
    kube.beforeNextClaimantDelete = () => new Promise((resolve) => setTimeout(resolve, 200));
    const unhandled: unknown[] = [];
    const note = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', note);
    try {
      await expect(claim('alice')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    } finally {
      process.off('unhandledRejection', note);
    }
    expect(unhandled).toEqual([]);
    expect(await holders()).toEqual([]);
    expect(await kube.listLeases(namespace)).toEqual([]);
  });
});
