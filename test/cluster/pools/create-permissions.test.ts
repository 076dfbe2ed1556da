import { afterAll, describe, expect, it } from 'vitest';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, usePrivateCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';
import { bindDocumentedRole } from '../rbac/documented-role.js';

// The simulator's lane (docs/testing.md): on KubeVirt's own controllers the clone objects this refused removal
// leaves are gone when the test lists them, not yet explained.
const cluster = usePrivateCluster({ kubevirt: 'simulated' });
const unbinds: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const unbind of unbinds) await unbind();
});

describe('a pool create whose identity may not delete clone objects', () => {
  it('fails FORBIDDEN naming the permission, removes the members it made, and names the clone objects it left', async () => {
    const namespace = await createTestNamespace(cluster(), 'create-rbac');
    const admin = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    await admin.context.cluster.createVm(namespace, stoppedVm('golden'));
    const missing = {
      scope: 'namespace',
      group: 'clone.kubevirt.io',
      resource: 'virtualmachineclones',
      verb: 'delete',
    } as const;
    const { kubeConfig, unbind } = await bindDocumentedRole(cluster(), {
      namespace,
      user: 'pool-maker',
      missing,
    });
    unbinds.push(unbind);
    const user = createVdi({ kubeConfig, namespace });

    const error = await failureOf(createPool(user.context, { name: 'devpool', from: 'golden', size: 2 }));
    expect(error.code).toBe('FORBIDDEN');
    expect(error.message).toContain('cannot delete resource "virtualmachineclones"');
    expect(error.message).toContain('devpool-1-clone');

    const vms = await admin.context.cluster.listVms(namespace);
    expect(vms.map((vm) => vm.metadata.name)).toEqual(['golden']);
    // what is left is what the error names: finished clone objects, which make nothing more
    const clones = await admin.context.cluster.resource(cloneKind).in(namespace).list();
    expect(clones.map((clone) => clone.metadata.name).sort()).toEqual(['devpool-1-clone', 'devpool-2-clone']);
    expect(clones.every((clone) => clone.status?.phase === 'Succeeded')).toBe(true);
    expect(await admin.context.cluster.listLeases(namespace)).toEqual([]);
  });
});
