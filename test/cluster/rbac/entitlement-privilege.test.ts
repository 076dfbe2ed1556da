import { afterEach, describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import { checkHolderEntitlement } from '../../../src/entitlements/pool-entitlement.js';
import { holderGroupsAnnotation, notEntitledAtAnnotation } from '../../../src/keys.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { caught, createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { bindDocumentedRole } from './documented-role.js';

const cluster = useSharedCluster();
const minute = 60_000;
const alice = 'alice@example.com';
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the reclaim of claims whose pool no longer lets their holder in, under exactly the documented Role', () => {
  it('records the groups, refreshes them at a refused console, marks the claim, reclaims it after the grace and reads pool status', async () => {
    const namespace = await createTestNamespace(cluster(), 'rbac-entitled');
    await createPoolMembers(cluster(), namespace, 'gpu', 1);
    const clock = createTestClock();
    const admin = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
    await setPoolSettings(admin.context, { name: 'gpu', allowedGroups: ['ml'] });
    const { kubeConfig, unbind } = await bindDocumentedRole(cluster(), {
      namespace,
      user: `corral-entitled-${namespace}`,
    });
    cleanups.push(unbind);
    const vdi = createVdi({
      kubeConfig,
      namespace,
      clock,
      audit: new MemoryAuditSink(),
      retry: { retries: 0 },
    });

    const { member } = await vdi.claim({ pool: 'gpu', identity: alice, groups: ['ml'] });
    const leaseName = `corral-vdi-${member}`;
    // the identity provider took alice out of ml: the gate of her console refuses and records her groups now
    const lease = await vdi.context.cluster.getLease(namespace, leaseName);
    const refused = await caught(
      checkHolderEntitlement(vdi.context, {
        kind: 'vm',
        namespace,
        pool: 'gpu',
        identity: alice,
        groups: ['devs'],
        isAdmin: false,
        lease,
      }),
    );
    expect(refused.code).toBe('NOT_ENTITLED');
    const refreshed = await vdi.context.cluster.getLease(namespace, leaseName);
    expect(refreshed?.metadata.annotations?.[holderGroupsAnnotation]).toBe('["devs"]');

    const engine = vdi.createSessionEngine({ namespaces: [namespace] });
    expect(await engine.runPass()).toMatchObject({ notEntitled: 1, errors: [] });
    const status = await vdi.readPoolStatus({ name: 'gpu' });
    expect(status.members[0]).toMatchObject({ holder: alice, entitlement: 'not-entitled' });
    expect(status.members[0]?.notEntitledAt).toEqual(
      (await vdi.context.cluster.getLease(namespace, leaseName))?.metadata.annotations?.[
        notEntitledAtAnnotation
      ],
    );
    clock.advance(15 * minute);
    expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
    expect(await vdi.context.cluster.getLease(namespace, leaseName)).toBeUndefined();
  });
});
