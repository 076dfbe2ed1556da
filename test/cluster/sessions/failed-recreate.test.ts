import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { createClaimsService } from '../../../src/claims/claims-service.js';
import type { VdiContext } from '../../../src/context.js';
import { assignedToKey, releasingAnnotation } from '../../../src/keys.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createSessionEngine, reclaimActor } from '../../../src/sessions/session-engine.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { CloneFaultCluster } from '../../support/clone-faults.js';
import {
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';
import { connectRfb } from '../../support/rfb-client.js';

const minute = 60_000;
const cluster = useSharedCluster();
const holder = 'alice@example.com';

describe('a reclaim of an ephemeral desktop whose clone fails', () => {
  it('leaves the holder a usable desktop: a console opens, it starts, and the next pass makes the member again', async () => {
    const namespace = await createTestNamespace(cluster(), 'recreate-fails');
    const clock = createTestClock();
    const audit = new MemoryAuditSink();
    const kube = new CloneFaultCluster(cluster().kubeConfig);
    const { context } = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
    const ctx: VdiContext = { ...context, cluster: kube };
    ctx.backends = { vm: createVmBackend(ctx) };
    const vdi = createClaimsService(ctx);
    await kube.createVm(namespace, stoppedVm('golden', { app: 'desktop' }));
    await createPool(ctx, { name: 'eph', from: 'golden', size: 1, namespace, ephemeral: true });
    const { member } = await vdi.claim({ pool: 'eph', identity: holder });
    const before = await kube.getVm(namespace, member);
    const engine = createSessionEngine(ctx, {
      namespaces: [namespace],
      policy: { maxSessionMs: 30 * minute },
    });

    // the storage refuses to snapshot the golden VM's disks, so every clone of it fails
    kube.faultsFrom.golden = { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' };
    clock.advance(31 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 0, failed: 1 });
    expect(audit.list().at(-1)).toMatchObject({
      action: 'vdi reclaim (max-duration)',
      user: reclaimActor,
      status: 'error',
      // KubeVirt's reason when the pass read the write that failed the clone, else where to read it (its event)
      error: expect.stringMatching(
        new RegExp(
          `snapshot \\S+ does not exist anymore|kubectl describe virtualmachineclone -n ${namespace} ${member}-staged-clone`,
        ),
      ),
    });

    // the desktop is the holder's as it was: the same member object, the claim not marked, the copy on it
    const kept = await kube.getVm(namespace, member);
    expect(kept?.metadata.uid).toBe(before?.metadata.uid);
    expect(kept?.metadata.deletionTimestamp).toBeUndefined();
    expect(kept?.metadata.annotations?.[assignedToKey]).toBe(holder);
    const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.spec.holderIdentity).toBe(holder);
    expect(lease?.metadata.annotations?.[releasingAnnotation]).toBeUndefined();

    // between the failure and the next pass the holder starts the desktop and works in a console
    expect(await vdi.start({ member, identity: holder })).toMatchObject({ owner: holder });
    await waitForRunningVmi(kube, namespace, member);
    const handle = await engine.openConsole({ member, namespace, identity: holder, kind: 'vnc' });
    const vnc = await kube.openVmiConsole(namespace, member, 'vnc', 1 << 22);
    try {
      expect((await connectRfb(vnc)).name).toBe(member);
    } finally {
      vnc.terminate();
    }
    expect(handle.ended.aborted).toBe(false);

    // the storage is fixed: the next pass tries again, makes the member again and ends the claim
    delete kube.faultsFrom.golden;
    clock.advance(minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0 });
    expect(await kube.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    const remade = await kube.getVm(namespace, member);
    expect(remade?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(remade?.metadata.labels).toMatchObject({
      'corral.dev/vdi-pool': 'eph',
      'corral.dev/vdi-ephemeral': 'true',
    });
    expect(remade?.metadata.annotations?.[assignedToKey]).toBeUndefined();
    await waitFor(() => handle.ended.aborted, {
      describe: 'the console to end once the member was made again',
    });
    // nothing of the recreate is left: one VM per member and the golden VM, no clone object
    expect((await kube.listVms(namespace)).map((vm) => vm.metadata.name).sort()).toEqual(['eph-1', 'golden']);
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(
      audit
        .list()
        .filter((record) => record.action === 'vdi reclaim (max-duration)')
        .map((record) => record.status),
    ).toEqual(['error', 'ok']);
  });
});
