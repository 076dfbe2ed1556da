import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { markClaimReleasing } from '../../../src/claims/lease-writes.js';
import { releasingAnnotation } from '../../../src/keys.js';
import { releaseStalledAfterMs } from '../../../src/sessions/plan-reclaim-pass.js';
import { createSessionEngine, reclaimActor } from '../../../src/sessions/session-engine.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

interface Stalled {
  namespace: string;
  member: string;
  vdi: Vdi;
  clock: TestClock;
  audit: MemoryAuditSink;
}

/** Alice claims a running desktop; her client marks its claim releasing, as a release does first, and dies. */
async function stallRelease(prefix: string): Promise<Stalled> {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
  const { member } = await vdi.claim({ pool: 'devpool', identity: 'alice@example.com' });
  await waitFor(() => vdi.getDesktop({ member }), {
    describe: `${member} to run`,
    until: (desktop) => desktop.phase === 'Running',
  });
  const lease = await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
  if (!lease) throw new Error(`${member} has no claim Lease`);
  clock.advance(60_000);
  const marked = await markClaimReleasing(vdi.context, lease, 'released');
  expect(marked?.metadata.annotations?.[releasingAnnotation]).toBeDefined();
  return { namespace, member, vdi, clock, audit };
}

describe('a release whose client died after it marked the claim releasing', () => {
  it('is finished by the first engine pass once its mark is older than the bound: member stopped and free', async () => {
    const { namespace, member, vdi, clock, audit } = await stallRelease('stalled-release');
    const engine = createSessionEngine(vdi.context, { namespaces: [namespace] });

    clock.advance(releaseStalledAfterMs);
    expect(await engine.runPass()).toMatchObject({ resumed: 1, failed: 0, errors: [] });

    expect(await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`)).toBeUndefined();
    const vm = await vdi.context.cluster.getVm(namespace, member);
    expect(vm?.spec.runStrategy).toBe('Halted');
    expect(vm?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(audit.list().at(-1)).toMatchObject({
      action: 'vdi release',
      user: reclaimActor,
      target: `vm/${namespace}/${member} (holder alice@example.com)`,
      status: 'ok',
    });
    // the member is free again: the next claim gets it
    const next = await vdi.claim({ pool: 'devpool', identity: 'bob@example.com' });
    expect(next.member).toBe(member);
  });

  it('is left to the release that may still be under way while its mark is younger than the bound', async () => {
    const { namespace, member, vdi, clock } = await stallRelease('young-release');
    const engine = createSessionEngine(vdi.context, { namespaces: [namespace] });

    clock.advance(releaseStalledAfterMs - 1000);
    expect(await engine.runPass()).toMatchObject({ resumed: 0, failed: 0, errors: [] });

    const lease = await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);
    expect(lease?.metadata.annotations?.[releasingAnnotation]).toBeDefined();
    expect((await vdi.context.cluster.getVm(namespace, member))?.spec.runStrategy).not.toBe('Halted');
  });
});
