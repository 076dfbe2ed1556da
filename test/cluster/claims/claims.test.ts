import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { isVdiError } from '../../../src/errors.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

async function waitForPhase(kube: KubeCluster, namespace: string, member: string, phase: string) {
  await waitFor(async () => (await kube.getVm(namespace, member))?.status?.printableStatus, {
    describe: `${member} to show ${phase}`,
    until: (shown) => shown === phase,
  });
}

describe('claim and release against the real apiserver', () => {
  it('claims a free member, writes the Lease and the VM presentation, and starts it', async () => {
    const namespace = await createTestNamespace(cluster(), 'claim');
    await createPoolMembers(cluster(), namespace, 'devpool', 3);
    const audit = new MemoryAuditSink();
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, audit });

    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
    expect(desktop.owner).toBe('alice@example.com');
    expect(desktop.startError).toBeUndefined();
    const kube = vdi.context.cluster;
    const lease = (await kube.getLease(namespace, `corral-vdi-${desktop.member}`)) as LeaseObject;
    expect(lease.spec).toMatchObject({ holderIdentity: 'alice@example.com', leaseDurationSeconds: 3600 });
    expect(lease.metadata.labels).toMatchObject({
      'corral.dev/vdi-pool': 'devpool',
      'corral.dev/vdi-member': desktop.member,
    });
    const vm = await kube.getVm(namespace, desktop.member);
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe('alice@example.com');
    expect(vm?.metadata.labels?.['corral.dev/vdi-assigned-to']).toBe('alice_example.com');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-claimed-at']).toBe(lease.spec.acquireTime);
    await waitForPhase(kube, namespace, desktop.member, 'Running');
    expect(audit.list().map((entry) => [entry.action, entry.status])).toEqual([['vdi claim', 'ok']]);
  });

  it('returns the same desktop and session to a retrying holder', async () => {
    const namespace = await createTestNamespace(cluster(), 'retry');
    await createPoolMembers(cluster(), namespace, 'devpool', 3);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const first = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    const again = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(again).toMatchObject({ member: first.member, sessionId: first.sessionId, retried: true });
    expect(first.retried).toBe(false);
  });

  it('releases: stops the VM, deletes the Lease and clears the presentation, keeping the VM', async () => {
    const namespace = await createTestNamespace(cluster(), 'release');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    await waitForPhase(vdi.context.cluster, namespace, desktop.member, 'Running');

    const released = await vdi.release({ member: desktop.member, identity: 'alice' });
    expect(released).toMatchObject({ holder: 'alice', force: false, reset: 'stopped' });
    expect(await vdi.context.cluster.getLease(namespace, `corral-vdi-${desktop.member}`)).toBeUndefined();
    await waitForPhase(vdi.context.cluster, namespace, desktop.member, 'Stopped');
    const vm = await vdi.context.cluster.getVm(namespace, desktop.member);
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(vm?.metadata.labels?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    const next = await vdi.claim({ pool: 'devpool', identity: 'bob' });
    expect(next.member).toBe(desktop.member);
    expect(next.sessionId).not.toBe(desktop.sessionId);
  });

  it('refuses a release by another identity with NOT_HOLDER and changes nothing', async () => {
    const namespace = await createTestNamespace(cluster(), 'notholder');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    const before = await vdi.context.cluster.getLease(namespace, `corral-vdi-${desktop.member}`);
    const vmBefore = await vdi.context.cluster.getVm(namespace, desktop.member);

    const error = await vdi
      .release({ member: desktop.member, identity: 'mallory' })
      .catch((caught: unknown) => caught);
    expect(isVdiError(error, 'NOT_HOLDER')).toBe(true);
    const after = await vdi.context.cluster.getLease(namespace, `corral-vdi-${desktop.member}`);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    const vmAfter = await vdi.context.cluster.getVm(namespace, desktop.member);
    expect(vmAfter?.metadata.annotations).toEqual(vmBefore?.metadata.annotations);
    expect(vmAfter?.spec.runStrategy).toBe(vmBefore?.spec.runStrategy);
  });

  it('lets an administrator release another identity’s desktop as a recorded force-release', async () => {
    const namespace = await createTestNamespace(cluster(), 'force');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const audit = new MemoryAuditSink();
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, audit });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    const released = await vdi.release({ member: desktop.member, identity: 'admin', asAdmin: true });
    expect(released.force).toBe(true);
    expect(audit.list().at(-1)).toMatchObject({
      action: 'vdi force-release',
      user: 'admin',
      target: `vm/${namespace}/${desktop.member} (holder alice)`,
      status: 'ok',
    });
  });

  it('keeps the claim and reports startError when the start fails', async () => {
    const namespace = await createTestNamespace(cluster(), 'startfail');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    // The simulator's fault knob makes every start of this VM fail.
    await vdi.context.cluster.patchVm(namespace, 'devpool-1', {
      metadata: {
        annotations: { 'sim.kubevirt.corral.dev/fail-start': 'insufficient memory on every node' },
      },
    });
    const desktop = await vdi.claim({ pool: 'devpool', identity: 'alice' });
    expect(desktop.startError).toMatch(/insufficient memory/);
    expect((await vdi.context.cluster.getLease(namespace, 'corral-vdi-devpool-1'))?.spec.holderIdentity).toBe(
      'alice',
    );
    const other = await vdi.claim({ pool: 'devpool', identity: 'bob' }).catch((caught: unknown) => caught);
    expect(isVdiError(other, 'NO_FREE_MEMBER')).toBe(true);
    expect((other as Error).message).toMatch(/^pool has no free members: every member of pool "devpool" /);
  });

  it('assigns the lowest free member in natural order, as an administrator expects', async () => {
    const namespace = await createTestNamespace(cluster(), 'assign');
    await createPoolMembers(cluster(), namespace, 'devpool', 12);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const assigned = [];
    for (const identity of ['alice', 'bob', 'carol'])
      assigned.push((await vdi.assign({ pool: 'devpool', identity })).member);
    expect(assigned).toEqual(['devpool-1', 'devpool-2', 'devpool-3']);
  });

  it('rejects bad input before any change', async () => {
    const namespace = await createTestNamespace(cluster(), 'badinput');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const attempts = [
      vdi.claim({ pool: 'devpool', identity: '' }),
      vdi.claim({ pool: 'devpool', identity: 'x'.repeat(2000) }),
      vdi.claim({ pool: 'Dev Pool', identity: 'alice' }),
      vdi.claim({ pool: 'devpool', identity: 'alice', namespace: 'Not_A_Namespace' }),
      vdi.release({ member: '../etc', identity: 'alice' }),
    ];
    for (const attempt of attempts) {
      const error = await attempt.catch((caught: unknown) => caught);
      expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    }
    expect(await vdi.context.cluster.listLeases(namespace)).toEqual([]);
  });

  it('uses only the namespace asked for: a pool in another namespace is not found', async () => {
    const home = await createTestNamespace(cluster(), 'home');
    const elsewhere = await createTestNamespace(cluster(), 'elsewhere');
    await createPoolMembers(cluster(), elsewhere, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace: home });
    const error = await vdi.claim({ pool: 'devpool', identity: 'alice' }).catch((caught: unknown) => caught);
    expect(isVdiError(error, 'POOL_NOT_FOUND')).toBe(true);
    const member = await vdi
      .release({ member: 'devpool-1', identity: 'alice' })
      .catch((caught: unknown) => caught);
    expect(isVdiError(member, 'MEMBER_NOT_FOUND')).toBe(true);
  });

  it('treats an expired claim as expired for its holder and free for others', async () => {
    const namespace = await createTestNamespace(cluster(), 'expiry');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await vdi.claim({ pool: 'devpool', identity: 'alice' });
    clock.advance(3601_000);
    const expired = await vdi
      .start({ member: 'devpool-1', identity: 'alice' })
      .catch((caught: unknown) => caught);
    expect(isVdiError(expired, 'CLAIM_EXPIRED')).toBe(true);
    const taken = await vdi.claim({ pool: 'devpool', identity: 'bob' });
    expect(taken.member).toBe('devpool-1');
    const lease = await vdi.context.cluster.getLease(namespace, 'corral-vdi-devpool-1');
    expect(lease?.spec).toMatchObject({ holderIdentity: 'bob', leaseTransitions: 1 });
  });
});

describe('claim races against the real apiserver', () => {
  it('gives 20 members to exactly 20 of 50 concurrent claimants, one holder each', async () => {
    const namespace = await createTestNamespace(cluster(), 'race');
    await createPoolMembers(cluster(), namespace, 'devpool', 20);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    let conflicts = 0;
    vdi.events.on('claim-conflict', () => {
      conflicts += 1;
    });
    const identities = Array.from({ length: 50 }, (_, index) => `user-${index}@example.com`);
    const outcomes = await Promise.allSettled(
      identities.map((identity) => vdi.claim({ pool: 'devpool', identity })),
    );
    const won = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const lost = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(won).toHaveLength(20);
    expect(lost).toHaveLength(30);
    expect(lost.every((error) => isVdiError(error, 'NO_FREE_MEMBER'))).toBe(true);
    expect(new Set(won.map((desktop) => desktop.member)).size).toBe(20);

    const leases = await vdi.context.cluster.listLeases(namespace);
    const vms = await vdi.context.cluster.listVms(namespace);
    expect(leases).toHaveLength(20);
    for (const vm of vms) {
      const lease = leases.find((candidate) => candidate.metadata.name === `corral-vdi-${vm.metadata.name}`);
      expect(vm.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe(lease?.spec.holderIdentity);
    }
    const requests = vdi.context.cluster.requestTotal;
    console.info(
      `race: 50 claims on 20 members, ${conflicts} Lease conflicts, ${requests} requests (${(requests / 50).toFixed(1)} per claim)`,
    );
  });

  it('lets exactly one of two claimants replace the same stale Lease', async () => {
    const namespace = await createTestNamespace(cluster(), 'stale');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const clock = createTestClock(new Date());
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await vdi.claim({ pool: 'devpool', identity: 'old-holder' });
    clock.advance(2 * 3600_000);
    const outcomes = await Promise.allSettled([
      vdi.claim({ pool: 'devpool', identity: 'alice' }),
      vdi.claim({ pool: 'devpool', identity: 'bob' }),
    ]);
    const winners = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(winners).toHaveLength(1);
    const loser = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    expect(isVdiError(loser.reason, 'NO_FREE_MEMBER')).toBe(true);
    const holder = (await vdi.context.cluster.getLease(namespace, 'corral-vdi-devpool-1'))?.spec
      .holderIdentity;
    expect(holder).toBe((winners[0] as PromiseFulfilledResult<{ owner: string }>).value.owner);
  });

  it('never takes a desktop from someone who was told they hold it when a release races a re-claim', async () => {
    const namespace = await createTestNamespace(cluster(), 'releaserace');
    await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    for (let round = 0; round < 8; round += 1) {
      await vdi.claim({ pool: 'devpool', identity: 'alice' });
      const [release, reclaim] = await Promise.allSettled([
        vdi.release({ member: 'devpool-1', identity: 'alice' }),
        vdi.claim({ pool: 'devpool', identity: 'bob' }),
      ]);
      expect(release.status).toBe('fulfilled');
      const lease = await vdi.context.cluster.getLease(namespace, 'corral-vdi-devpool-1');
      const vm = await vdi.context.cluster.getVm(namespace, 'devpool-1');
      if (reclaim.status === 'fulfilled') {
        expect(lease?.spec.holderIdentity).toBe('bob');
        expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe('bob');
        await vdi.release({ member: 'devpool-1', identity: 'bob' });
      } else {
        expect(isVdiError(reclaim.reason, 'NO_FREE_MEMBER')).toBe(true);
        expect(lease).toBeUndefined();
      }
      await waitForPhase(vdi.context.cluster, namespace, 'devpool-1', 'Stopped');
      // a clean release leaves no presentation behind, so the next round starts from a free member
      const cleaned = await vdi.context.cluster.getVm(namespace, 'devpool-1');
      expect(cleaned?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    }
  });
});
