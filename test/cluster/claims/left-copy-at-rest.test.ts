import { describe, expect, it } from 'vitest';
import { assignedToKey, claimedAtAnnotation, sessionIdAnnotation } from '../../../src/keys.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe("a stopped member that shows a holder's annotation and label with no Lease", () => {
  it("reads as nobody's and free, and the next claim takes it and writes its own copy over the old one", async () => {
    const namespace = await createTestNamespace(cluster(), 'left-at-rest');
    const [member] = await createPoolMembers(cluster(), namespace, 'devpool', 1);
    const name = member ?? '';
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const kube = vdi.context.cluster;
    // what a claim whose process died between its writes, or whose take-back failed, leaves: the copy, no Lease
    await kube.patchVm(namespace, name, {
      metadata: {
        labels: { [assignedToKey]: 'u16' },
        annotations: {
          [assignedToKey]: 'u16',
          [sessionIdAnnotation]: 'an-ended-session',
          [claimedAtAnnotation]: '2026-07-02T11:00:00.000Z',
        },
      },
    });
    expect((await kube.getVm(namespace, name))?.status?.printableStatus).toBe('Stopped');
    expect(await kube.getLease(namespace, `corral-vdi-${name}`)).toBeUndefined();

    const pool = await vdi.getPool({ name: 'devpool' });
    expect(pool.members[0]?.state).toEqual({ kind: 'free' });
    expect(pool.counts).toMatchObject({ free: 1, claimed: 0 });
    expect(await vdi.listDesktops({ identity: 'u16' })).toEqual([]);
    expect(await vdi.getDesktop({ member: name })).toMatchObject({ owner: undefined, sessionId: undefined });

    const bob = await vdi.claim({ pool: 'devpool', identity: 'bob' });
    expect(bob).toMatchObject({ member: name, owner: 'bob', adopted: false });
    const vm = await kube.getVm(namespace, name);
    expect(vm?.metadata.annotations).toMatchObject({
      [assignedToKey]: 'bob',
      [sessionIdAnnotation]: bob.sessionId,
    });
    expect(vm?.metadata.labels?.[assignedToKey]).toBe('bob');
    expect((await kube.getLease(namespace, `corral-vdi-${name}`))?.spec.holderIdentity).toBe('bob');
  });
});
