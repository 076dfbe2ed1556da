import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { canInspect } from '../../../src/claims/access.js';
import { type ClaimsService, createClaimsService } from '../../../src/claims/claims-service.js';
import { readDesktopAs } from '../../../src/claims/read-held-member.js';
import type { VdiContext } from '../../../src/context.js';
import { VdiError } from '../../../src/errors.js';
import { releasingAnnotation } from '../../../src/keys.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createSessionEngine, reclaimActor } from '../../../src/sessions/session-engine.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { CloneFaultCluster } from '../../support/clone-faults.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';

const minute = 60_000;
const cluster = useSharedCluster();

interface Setup {
  namespace: string;
  clock: TestClock;
  audit: MemoryAuditSink;
  kube: CloneFaultCluster;
  vdi: ClaimsService;
  ctx: VdiContext;
}

/** An ephemeral pool (one member unless `size` says) whose clones fail as `kube.faults` says; alice claims one. */
async function setUp(prefix: string, size = 1): Promise<Setup & { member: string }> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const kube = new CloneFaultCluster(cluster().kubeConfig);
  const { context } = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
  const ctx: VdiContext = { ...context, cluster: kube };
  ctx.backends = { vm: createVmBackend(ctx) };
  const vdi = createClaimsService(ctx);
  await kube.createVm(namespace, stoppedVm('golden'));
  await createPool(ctx, { name: 'eph', from: 'golden', size, namespace, ephemeral: true });
  const { member } = await vdi.claim({ pool: 'eph', identity: 'alice@example.com' });
  return { namespace, clock, audit, kube, vdi, ctx, member };
}

describe('a claim whose member is gone', () => {
  it('reads as Resetting for its holder after a failed recreate, and the next engine pass finishes the reset', async () => {
    const { namespace, clock, audit, kube, vdi, ctx, member } = await setUp('gone-resume');
    kube.faults[member] = { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' };

    const failed = await failureOf(vdi.release({ member, identity: 'alice@example.com' }));
    expect(failed.code).toBe('RECREATE_FAILED');
    expect(await kube.getVm(namespace, member)).toBeUndefined();
    const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.metadata.annotations?.[releasingAnnotation]).toBeDefined();

    // the holder keeps a desktop it can read, not a 404
    const resetting = { id: `vm/${namespace}/${member}`, owner: 'alice@example.com', phase: 'Resetting' };
    expect(await vdi.getDesktop({ member })).toMatchObject(resetting);
    expect(await vdi.listDesktops({ identity: 'alice@example.com' })).toEqual([
      expect.objectContaining(resetting),
    ]);
    const read = await readDesktopAs(ctx, {
      namespace,
      member,
      identity: 'alice@example.com',
      isAdmin: false,
      decide: canInspect,
    });
    expect(read.view).toMatchObject({ ...resetting, pool: 'eph', running: false });
    await expect(
      readDesktopAs(ctx, {
        namespace,
        member,
        identity: 'bob@example.com',
        isAdmin: false,
        decide: canInspect,
      }),
    ).rejects.toMatchObject({ code: 'NOT_HOLDER' });
    expect(audit.list().at(-1)).toMatchObject({ action: 'vdi release', status: 'error' });

    // the storage is fixed; the engine's pass resumes the release it finds stopped half way
    delete kube.faults[member];
    const engine = createSessionEngine(ctx, { namespaces: [namespace] });
    clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ resumed: 1, failed: 0, errors: [] });
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    const remade = await kube.getVm(namespace, member);
    expect(remade?.metadata.labels).toMatchObject({ 'corral.dev/vdi-ephemeral': 'true' });
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(audit.list().at(-1)).toMatchObject({ user: reclaimActor, status: 'ok' });
    expect((await vdi.getDesktop({ member })).owner).toBeUndefined();
  });

  it('gives the claim back when the recreate fails before it deletes the member, and the next release makes it again', async () => {
    const { namespace, audit, kube, vdi, member } = await setUp('gone-before');
    const golden = await kube.getVm(namespace, 'golden');
    await kube.deleteVm(namespace, 'golden');
    await waitFor(() => kube.getVm(namespace, 'golden'), {
      describe: 'the golden VM to be gone',
      until: (vm) => vm === undefined,
    });

    const failed = await failureOf(vdi.release({ member, identity: 'alice@example.com' }));
    expect(failed.code).toBe('RECREATE_FAILED');
    expect(failed.message).toContain('as before');
    const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.spec.holderIdentity).toBe('alice@example.com');
    expect(lease?.metadata.annotations?.[releasingAnnotation]).toBeUndefined();
    expect(audit.list().at(-1)).toMatchObject({ action: 'vdi release', status: 'error' });
    expect(await vdi.start({ member, identity: 'alice@example.com' })).toMatchObject({
      owner: 'alice@example.com',
    });

    await kube.createVm(namespace, stoppedVm('golden', golden?.metadata.labels ?? {}));
    expect(await vdi.release({ member, identity: 'alice@example.com' })).toMatchObject({
      reset: 'recreated',
    });
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  });

  it('keeps a failed resume claimed and Resetting, records it, and tries again on the next pass', async () => {
    const { namespace, clock, audit, kube, vdi, ctx, member } = await setUp('gone-retry');
    kube.faults[member] = { [simulatorAnnotations.fail]: 'no snapshot class' };
    await failureOf(vdi.release({ member, identity: 'alice@example.com' }));
    const engine = createSessionEngine(ctx, { namespaces: [namespace] });

    clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ resumed: 0, failed: 1 });
    expect(audit.list().at(-1)).toMatchObject({
      user: reclaimActor,
      status: 'error',
      // KubeVirt's reason when the pass read the write that failed the clone, else where to read it (its event)
      error: expect.stringMatching(
        new RegExp(
          `snapshot \\S+ does not exist anymore|kubectl describe virtualmachineclone -n ${namespace} ${member}-clone`,
        ),
      ),
    });
    expect(await vdi.getDesktop({ member })).toMatchObject({
      phase: 'Resetting',
      owner: 'alice@example.com',
    });

    delete kube.faults[member];
    clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ resumed: 1, failed: 0 });
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  });

  it('never renews the Lease of a claim whose member was deleted without a release', async () => {
    const { namespace, clock, kube, vdi, ctx, member } = await setUp('gone-renew', 2);
    const claimed = await kube.getLease(namespace, `corral-vdi-${member}`);
    await kube.deleteVm(namespace, member);
    await waitFor(async () => (await kube.getVm(namespace, member)) === undefined, {
      describe: `${member} to be gone`,
    });
    const engine = createSessionEngine(ctx, { namespaces: [namespace] });

    clock.advance(30 * minute);
    expect(await engine.runPass()).toMatchObject({ renewed: 0, errors: [] });
    const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.spec.renewTime).toBe(claimed?.spec.renewTime);
    expect(await vdi.getDesktop({ member })).toMatchObject({ phase: 'Resetting' });

    // its holder's release makes the member again, from the golden VM its sibling names, and ends the claim
    await vdi.release({ member, identity: 'alice@example.com' });
    expect(await kube.getVm(namespace, member)).toBeDefined();
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
  });

  it("makes the member again when a takeover's recreate failed half way, and keeps the claim its new holder's", async () => {
    const { namespace, clock, audit, kube, vdi, ctx, member } = await setUp('gone-takeover');
    // alice's claim lapses; bob takes the member over, and the recreate of its reset fails after the delete
    clock.advance(61 * minute);
    kube.faults[member] = { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' };
    const failed = await failureOf(vdi.claim({ pool: 'eph', identity: 'bob@example.com' }));
    expect(failed).toMatchObject({ code: 'RECREATE_FAILED', retryable: true });
    expect(await kube.getVm(namespace, member)).toBeUndefined();
    const taken = await kube.getLease(namespace, `corral-vdi-${member}`);
    const session = taken?.metadata.annotations?.['corral.dev/vdi-session-id'];
    expect(taken?.spec.holderIdentity).toBe('bob@example.com');
    expect(taken?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBe(session);

    // bob does not come back; once the storage is fixed the engine makes the member again
    delete kube.faults[member];
    const engine = createSessionEngine(ctx, { namespaces: [namespace] });
    clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ resumed: 1, failed: 0, errors: [] });
    const remade = await kube.getVm(namespace, member);
    expect(remade?.metadata.labels).toMatchObject({ 'corral.dev/vdi-ephemeral': 'true' });
    const kept = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(kept?.spec.holderIdentity).toBe('bob@example.com');
    expect(kept?.metadata.annotations?.['corral.dev/vdi-session-id']).toBe(session);
    expect(kept?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBeUndefined();
    expect(audit.list().at(-1)).toMatchObject({
      action: 'vdi reclaim (expired)',
      user: reclaimActor,
      status: 'ok',
    });
    // a second pass has nothing left to finish, and bob's next claim hands him the member, same session
    expect(await engine.runPass()).toMatchObject({ resumed: 0, failed: 0, errors: [] });
    expect(await vdi.claim({ pool: 'eph', identity: 'bob@example.com' })).toMatchObject({
      member,
      sessionId: session,
    });
  });

  it("stops a fenced finish between the member made again and the mark cleared, and the holder's next claim clears it", async () => {
    const { namespace, clock, kube, vdi, ctx, member } = await setUp('gone-fenced');
    clock.advance(61 * minute);
    kube.faults[member] = { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' };
    await failureOf(vdi.claim({ pool: 'eph', identity: 'bob@example.com' }));
    delete kube.faults[member];

    // a replica that loses the leader Lease once its recreate is done: its next write must not land
    const notLeader = new VdiError('NOT_LEADER', 'another replica leads now');
    const fenced = createSessionEngine(ctx, {
      namespaces: [namespace],
      fence: async () => {
        if (await kube.getVm(namespace, member)) throw notLeader;
      },
    });
    clock.advance(minute);
    expect(await fenced.runPass()).toMatchObject({ resumed: 0, errors: [notLeader] });
    const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBe(
      lease?.metadata.annotations?.['corral.dev/vdi-session-id'],
    );

    // the member is there again, so only its holder's next claim finishes the reset, as after any takeover
    const leader = createSessionEngine(ctx, { namespaces: [namespace] });
    expect(await leader.runPass()).toMatchObject({ resumed: 0, failed: 0, errors: [] });
    expect(await vdi.claim({ pool: 'eph', identity: 'bob@example.com' })).toMatchObject({
      member,
      sessionId: lease?.metadata.annotations?.['corral.dev/vdi-session-id'],
    });
    const cleared = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(cleared?.metadata.annotations?.['corral.dev/vdi-reset-due']).toBeUndefined();
  });
});
