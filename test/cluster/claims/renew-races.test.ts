import { describe, expect, it } from 'vitest';
import { renewDesktop } from '../../../src/claims/renew-desktop.js';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

// Runs a one-shot action just before the renewal's Lease write reaches the apiserver: the other party of the race.
class RacingCluster extends KubeCluster {
  private beforeReplace: (() => Promise<void>) | undefined;

  beforeNextReplace(action: () => Promise<void>): void {
    this.beforeReplace = action;
  }

  override async replaceLease(namespace: string, lease: LeaseObject): Promise<LeaseObject> {
    const action = this.beforeReplace;
    this.beforeReplace = undefined;
    await action?.();
    return super.replaceLease(namespace, lease);
  }
}

interface Setup {
  namespace: string;
  clock: TestClock;
  vdi: Vdi;
  ctx: VdiContext;
  kube: RacingCluster;
}

async function setUp(prefix: string): Promise<Setup> {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const kube = new RacingCluster(cluster().kubeConfig);
  const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
  ctx.backends.vm = createVmBackend(ctx);
  return { namespace, clock, vdi, ctx, kube };
}

async function readLease(setup: Setup): Promise<LeaseObject | undefined> {
  return await setup.vdi.context.cluster.getLease(setup.namespace, 'corral-vdi-devpool-1');
}

const asAlice = { member: 'devpool-1', identity: 'alice' };

describe('a renewal racing another write of the same Lease', () => {
  it('renews when the same claim was renewed between its read and its write, as a retried write whose first answer was lost', async () => {
    const setup = await setUp('renewtwice');
    await setup.vdi.claim({ pool: 'devpool', identity: 'alice' });
    const session = (await readLease(setup))?.metadata.annotations?.['corral.dev/vdi-session-id'];
    setup.clock.advance(10 * 60_000);
    setup.kube.beforeNextReplace(async () => {
      await setup.vdi.renew(asAlice);
    });
    setup.clock.advance(60_000);

    const renewed = await renewDesktop(setup.ctx, { ...asAlice, namespace: setup.namespace });

    expect(renewed.owner).toBe('alice');
    expect(renewed.sessionId).toBe(session);
    const lease = await readLease(setup);
    expect(lease?.metadata.annotations?.['corral.dev/vdi-session-id']).toBe(session);
    expect(Date.parse(lease?.spec.renewTime ?? '')).toBe(setup.clock.now().getTime());
  });

  // Another writer changes the claim's annotations just before the renewal's write; the renewal must refuse.
  async function renewAfterAnnotating(
    prefix: string,
    annotate: (annotations: Record<string, string>) => Record<string, string>,
  ) {
    const setup = await setUp(prefix);
    await setup.vdi.claim({ pool: 'devpool', identity: 'alice' });
    const before = await readLease(setup);
    if (!before) throw new Error('the claim wrote no Lease');
    setup.kube.beforeNextReplace(async () => {
      const annotations = annotate({ ...before.metadata.annotations });
      await setup.vdi.context.cluster.replaceLease(setup.namespace, {
        ...before,
        metadata: { ...before.metadata, annotations },
      });
    });
    const error = await renewDesktop(setup.ctx, { ...asAlice, namespace: setup.namespace }).catch(
      (caught: unknown) => caught,
    );
    return { error, before, after: await readLease(setup) };
  }

  it('refuses when a release marked the claim between its read and its write', async () => {
    const { error, before, after } = await renewAfterAnnotating('renewrelease', (annotations) => ({
      ...annotations,
      'corral.dev/vdi-releasing': annotations['corral.dev/vdi-session-id'] ?? '',
    }));

    expect(isVdiError(error, 'CLAIM_CHANGED')).toBe(true);
    expect(after?.spec.renewTime).toBe(before.spec.renewTime);
  });

  it('refuses when a new claim replaced the expired one between its read and its write', async () => {
    const { error, after } = await renewAfterAnnotating('renewreclaimed', (annotations) => ({
      ...annotations,
      'corral.dev/vdi-session-id': 'a-newer-session',
    }));

    expect(isVdiError(error, 'CLAIM_CHANGED')).toBe(true);
    expect(after?.metadata.annotations?.['corral.dev/vdi-session-id']).toBe('a-newer-session');
  });
});
