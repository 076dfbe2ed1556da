import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { sanitizeLabelValue } from '../../../src/sanitize-label-value.js';
import { loadFixtures } from '../../../src/testing/fixtures.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

async function loadLegacyPool(namespace: string) {
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
  for (const vm of loadFixtures('v0.6.0')) await vdi.context.cluster.createVm(namespace, vm);
  return vdi;
}

describe('v0.6.0 assignments on the real apiserver', () => {
  it('lists label-only members as assigned to their v0.6.0 users and never as free', async () => {
    const namespace = await createTestNamespace(cluster(), 'legacy-list');
    const vdi = await loadLegacyPool(namespace);
    const desktops = await vdi.listDesktops({ all: true });
    const owners = Object.fromEntries(desktops.map((desktop) => [desktop.member, desktop.owner]));
    expect(owners).toEqual({
      'legacypool-1': 'alice',
      'legacypool-2': undefined,
      'legacypool-3': 'bob',
      'legacypool-4': 'carol',
    });
    expect(desktops.filter((desktop) => desktop.legacy).map((desktop) => desktop.member)).toEqual([
      'legacypool-1',
      'legacypool-3',
      'legacypool-4',
    ]);
  });

  it('adopts the member of the identity in the label: creates its Lease and keeps the desktop', async () => {
    const namespace = await createTestNamespace(cluster(), 'legacy-adopt');
    const vdi = await loadLegacyPool(namespace);
    const before = await vdi.context.cluster.getVm(namespace, 'legacypool-1');
    const claimed = await vdi.claim({ pool: 'legacypool', identity: 'alice' });
    expect(claimed).toMatchObject({ member: 'legacypool-1', adopted: true, owner: 'alice' });
    const lease = await vdi.context.cluster.getLease(namespace, 'corral-vdi-legacypool-1');
    expect(lease?.spec.holderIdentity).toBe('alice');
    const after = await vdi.context.cluster.getVm(namespace, 'legacypool-1');
    expect(after?.metadata.uid).toBe(before?.metadata.uid);
    expect(after?.metadata.labels?.['app.kubernetes.io/name']).toBe('golden-desktop');
    expect(after?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe('alice');
  });

  it('never hands a v0.6.0 member to another identity, and does not adopt for a longer form of the name', async () => {
    const namespace = await createTestNamespace(cluster(), 'legacy-other');
    const vdi = await loadLegacyPool(namespace);
    const dave = await vdi.claim({ pool: 'legacypool', identity: 'dave' });
    expect(dave.member).toBe('legacypool-2');
    const second = await vdi
      .claim({ pool: 'legacypool', identity: 'alice@example.com' })
      .catch((caught: unknown) => caught);
    expect(isVdiError(second, 'NO_FREE_MEMBER')).toBe(true);
  });

  it('lets an administrator unassign a v0.6.0 member: it stops and becomes free', async () => {
    const namespace = await createTestNamespace(cluster(), 'legacy-unassign');
    const vdi = await loadLegacyPool(namespace);
    const result = await vdi.unassign({ member: 'legacypool-4', identity: 'admin', asAdmin: true });
    expect(result).toMatchObject({ holder: 'carol', force: true, reset: 'stopped' });
    const vm = await vdi.context.cluster.getVm(namespace, 'legacypool-4');
    expect(vm?.metadata.labels?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    expect(vm?.spec.running).toBe(false);
    const refused = await vdi
      .unassign({ member: 'legacypool-3', identity: 'mallory' })
      .catch((caught: unknown) => caught);
    expect(isVdiError(refused, 'NOT_HOLDER')).toBe(true);
  });
});

describe('label-safe identities on the real apiserver', () => {
  it('are accepted as label values for real-world and random identities', async () => {
    const namespace = await createTestNamespace(cluster(), 'labels');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const identities = [
      'alice@example.com',
      'alice@github',
      'https://accounts.example.com|00u1a2b3c4d5e6f7g8h9',
      `https://login.example.org/tenant/${'x'.repeat(80)}|subject:with/odd|chars`,
      '@@@',
      ...fc.sample(fc.string({ minLength: 1, maxLength: 120 }), { numRuns: 25, seed: 42 }),
    ].filter((identity) => identity.trim() === identity && identity.trim() !== '');
    await Promise.all(
      identities.map((identity, index) =>
        vdi.context.cluster.createVm(
          namespace,
          stoppedVm(`label-${index}`, { 'corral.dev/vdi-assigned-to': sanitizeLabelValue(identity) }),
        ),
      ),
    );
    expect(await vdi.context.cluster.listVms(namespace)).toHaveLength(identities.length);
  });
});
