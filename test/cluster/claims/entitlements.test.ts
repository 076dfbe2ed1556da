import { describe, expect, it } from 'vitest';
import { holderGroupsAnnotation } from '../../../src/keys.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import {
  caught,
  createPoolMembers,
  createTestNamespace,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';

const cluster = useSharedCluster();
const image = 'ghcr.io/acme/devbox:1.4';
const alice = 'alice@example.com';
const bob = 'bob@example.com';

/** A VM pool `gpu` for the group `ml` and the user bob, and a container pool `devbox` for alice only. */
async function setUp(prefix: string): Promise<{ namespace: string; vdi: Vdi }> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock(new Date()) });
  await createPoolMembers(cluster(), namespace, 'gpu', 2);
  await setPoolSettings(vdi.context, { name: 'gpu', allowedGroups: ['ml'], allowedUsers: [bob] });
  await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, allowedUsers: [alice] } });
  await vdi.reconcileCtPool({ name: 'devbox' });
  return { namespace, vdi };
}

describe('a pool that lets only some groups and users claim', () => {
  it('refuses anyone else with NOT_ENTITLED naming the pool, and writes nothing: no claim Lease, no claimant Lease, no waiter', async () => {
    const { namespace, vdi } = await setUp('entitled-no');
    const before = await vdi.context.cluster.listLeases(namespace);
    const refusals = [
      await caught(vdi.claim({ pool: 'gpu', identity: alice, groups: ['devs'] })),
      await caught(vdi.claim({ pool: 'gpu', identity: alice, groups: ['devs'], wait: true })),
      await caught(vdi.claim({ pool: 'devbox', identity: bob, kind: 'ct', groups: ['ml'] })),
    ];
    expect(refusals.map((error) => error.code)).toEqual(['NOT_ENTITLED', 'NOT_ENTITLED', 'NOT_ENTITLED']);
    expect(refusals[0]?.message).toContain(`vm/${namespace}/gpu`);
    expect(refusals[0]?.message).toContain('ml');
    expect(refusals[2]?.message).toContain(`ct/${namespace}/devbox`);
    expect(await vdi.context.cluster.listLeases(namespace)).toEqual(before);
  });

  it('lets a member of an allowed group, an allowed user and an administrator claim', async () => {
    const { vdi } = await setUp('entitled-yes');
    expect((await vdi.claim({ pool: 'gpu', identity: alice, groups: ['devs', 'ml'] })).owner).toBe(alice);
    expect((await vdi.claim({ pool: 'gpu', identity: bob, groups: [] })).owner).toBe(bob);
    expect(
      (await vdi.claim({ pool: 'devbox', identity: 'carol', kind: 'ct', groups: [], asAdmin: true })).owner,
    ).toBe('carol');
  });

  it("lets an administrator assign a member to anyone: the assign checks the admin, not the assignee's groups", async () => {
    const { vdi } = await setUp('entitled-assign');
    const assigned = await vdi.assign({ pool: 'gpu', identity: 'dave', actor: 'admin@example.com' });
    expect(assigned.owner).toBe('dave');
  });

  it("does not check a claim that names no groups: an operator's own call, trusted as the CLI is", async () => {
    const { vdi } = await setUp('entitled-trusted');
    expect((await vdi.claim({ pool: 'gpu', identity: 'dave' })).owner).toBe('dave');
  });

  it('refuses an allowed group that no header could carry, and writes nothing', async () => {
    const { vdi } = await setUp('entitled-bad');
    const error = await caught(setPoolSettings(vdi.context, { name: 'gpu', allowedGroups: ['ml,ops'] }));
    expect(error.code).toBe('INVALID_INPUT');
    expect((await vdi.getPool({ name: 'gpu' })).settings.allowedGroups).toEqual(['ml']);
  });

  it('refuses connect with the caller’s groups to a holder the pool no longer lets in, VM and container alike; an operator’s connect names no groups and is not checked', async () => {
    const { namespace, vdi } = await setUp('entitled-connect');
    const onVm = await vdi.claim({ pool: 'gpu', identity: alice, groups: ['ml'] });
    const onCt = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct', groups: [] });
    await setPoolSettings(vdi.context, { name: 'gpu', allowedGroups: ['research'] });
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, allowedUsers: [bob] } });
    const refusals = [
      await caught(vdi.connect({ member: onVm.member, identity: alice, groups: ['ml'] })),
      await caught(vdi.connect({ member: onCt.member, identity: alice, kind: 'ct', groups: [] })),
    ];
    expect(refusals.map((error) => error.code)).toEqual(['NOT_ENTITLED', 'NOT_ENTITLED']);
    expect(refusals[0]?.message).toContain(`vm/${namespace}/gpu`);
    await waitForRunningVmi(vdi.context.cluster, namespace, onVm.member);
    expect((await vdi.connect({ member: onVm.member, identity: alice, probeTimeoutMs: 200 })).holder).toBe(
      alice,
    );
  });

  it('records the groups a claim was let in with; a retry with other groups records those in its renewal, and an operator’s claim records unchecked', async () => {
    const { namespace, vdi } = await setUp('entitled-record');
    const recorded = async (member: string) =>
      (await vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`))?.metadata.annotations?.[
        holderGroupsAnnotation
      ];
    const first = await vdi.claim({ pool: 'gpu', identity: alice, groups: ['ml', 'devs'] });
    expect(await recorded(first.member)).toBe('["devs","ml"]');
    const retry = await vdi.claim({ pool: 'gpu', identity: alice, groups: ['research', 'ml'] });
    expect(retry).toMatchObject({ member: first.member, retried: true });
    expect(await recorded(first.member)).toBe('["ml","research"]');
    const operators = await vdi.claim({ pool: 'gpu', identity: 'dave' });
    expect(await recorded(operators.member)).toBe('unchecked');
  });
});
