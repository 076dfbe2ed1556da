import { describe, expect, it } from 'vitest';
import { releasingAnnotation } from '../../../src/keys.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import {
  caught,
  createPoolMembers,
  createTestNamespace,
  stoppedVm,
  useSharedCluster,
} from '../../support/cluster.js';

const cluster = useSharedCluster();
const image = 'ghcr.io/acme/devbox:1.4';
const alice = 'alice@example.com';
const bob = 'bob@example.com';

/** A namespace with the VM pool `bp` (bob holds `bp-1`) and the container pool `devbox` (alice holds `devbox-1`). */
async function setUp(prefix: string): Promise<{ namespace: string; vdi: Vdi }> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock(new Date()) });
  await createPoolMembers(cluster(), namespace, 'bp', 1);
  await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
  await vdi.reconcileCtPool({ name: 'devbox' });
  await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
    describe: `Pod ${namespace}/devbox-1 to be Ready`,
    until: (pod) => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
  expect((await vdi.claim({ pool: 'bp', identity: bob })).member).toBe('bp-1');
  expect((await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' })).member).toBe('devbox-1');
  return { namespace, vdi };
}

describe('a member named by the wrong kind', () => {
  it('is not found by any call that takes a desktop, a VM member named as a container and a container member named as a VM, and its claim is left alone', async () => {
    const { namespace, vdi } = await setUp('kinds');
    const wrongKinds = [
      { member: 'bp-1', kind: 'ct', holder: bob, rightId: `vm/${namespace}/bp-1` },
      { member: 'devbox-1', kind: 'vm', holder: alice, rightId: `ct/${namespace}/devbox-1` },
    ] as const;
    for (const { member, kind, holder, rightId } of wrongKinds) {
      const asHolder = { member, kind, identity: holder };
      const calls: Record<string, () => Promise<unknown>> = {
        getDesktop: () => vdi.getDesktop({ member, kind }),
        start: () => vdi.start(asHolder),
        renew: () => vdi.renew(asHolder),
        release: () => vdi.release(asHolder),
        unassign: () => vdi.unassign({ ...asHolder, asAdmin: true }),
        connect: () => vdi.connect(asHolder),
        ...(kind === 'ct'
          ? { openTerminal: () => vdi.openTerminal(`ct/${namespace}/${member}`, { identity: holder }) }
          : { redirectUsb: () => vdi.redirectUsb({ member, device: '1050:0407', identity: holder }) }),
      };
      for (const [name, call] of Object.entries(calls)) {
        const error = await caught(call());
        // USB redirection names no kind: a container member gets the container's answer, that it takes no device
        const code = name === 'redirectUsb' ? 'UNSUPPORTED_BACKEND' : 'MEMBER_NOT_FOUND';
        expect([name, error.code], `${name} of ${kind}/${member}`).toEqual([name, code]);
        expect(error.message, `${name} of ${kind}/${member}`).toContain(rightId);
      }
    }

    expect((await vdi.getDesktop({ member: 'bp-1' })).owner).toBe(bob);
    expect((await vdi.getDesktop({ member: 'devbox-1', kind: 'ct' })).owner).toBe(alice);
    for (const member of ['bp-1', 'devbox-1']) {
      const lease = await vdi.context.cluster.getLease(namespace, leaseNameFor(member));
      expect(lease?.metadata.annotations?.[releasingAnnotation], member).toBeUndefined();
    }
  });

  it('lists a container desktop whose Pod is gone under its claim by its own kind, and reads it under that ID', async () => {
    const { namespace, vdi } = await setUp('kinds-gone');
    const kube = vdi.context.cluster;
    const pod = await kube.resource(podKind).in(namespace).get('devbox-1');
    await kube
      .resource(podKind)
      .in(namespace)
      .delete('devbox-1', { preconditions: { uid: pod?.metadata.uid ?? '' }, gracePeriodSeconds: 0 });
    await waitFor(() => kube.resource(podKind).in(namespace).get('devbox-1'), {
      describe: `Pod ${namespace}/devbox-1 to be gone`,
      until: (found) => found === undefined,
    });

    const listed = await vdi.listDesktops({ identity: alice });
    expect(listed.map(({ id, phase }) => ({ id, phase }))).toEqual([
      { id: `ct/${namespace}/devbox-1`, phase: 'Resetting' },
    ]);
    expect(await vdi.getDesktop({ member: 'devbox-1', kind: 'ct' })).toMatchObject({
      owner: alice,
      phase: 'Resetting',
    });
  });

  it('answers MEMBER_NOT_FOUND for a VM that is no pool member, saying it is no member of any pool', async () => {
    const namespace = await createTestNamespace(cluster(), 'nonmember');
    const vdi = createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock: createTestClock(new Date()),
    });
    await vdi.context.cluster.createVm(namespace, stoppedVm('golden'));
    const asAlice = { member: 'golden', identity: alice };
    for (const [name, call] of Object.entries({
      getDesktop: () => vdi.getDesktop({ member: 'golden' }),
      start: () => vdi.start(asAlice),
      release: () => vdi.release({ ...asAlice, asAdmin: true }),
      connect: () => vdi.connect(asAlice),
    })) {
      const error = await caught(call());
      expect([name, error.code]).toEqual([name, 'MEMBER_NOT_FOUND']);
      expect(error.message, name).toContain('not a member of any pool');
    }
  });
});
