import { afterAll, describe, expect, it } from 'vitest';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { createVdi } from '../../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';
import { bindDocumentedRole } from '../rbac/documented-role.js';

const cluster = useSharedCluster();
const unbinds: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const unbind of unbinds) await unbind();
});

describe('a pool create whose identity may not delete clone objects', () => {
  it('fails FORBIDDEN naming the permission and leaves nothing: KubeVirt removes each finished clone with its VM', async () => {
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
    // KubeVirt's clone controller deletes a finished clone whose VM is gone: the error names nothing as left
    expect(error.message).toContain('Everything this call made was removed again');
    expect(error.message).not.toContain('kubectl delete');
    const members = (
      error.details as { members: { member: string; removed?: boolean; cloneLeft?: string }[] }
    ).members;
    expect(members.map(({ member, removed, cloneLeft }) => ({ member, removed, cloneLeft }))).toEqual([
      { member: 'devpool-1', removed: true, cloneLeft: undefined },
      { member: 'devpool-2', removed: true, cloneLeft: undefined },
    ]);
    expect(await admin.context.cluster.resource(cloneKind).in(namespace).list()).toEqual([]);
    const vms = await admin.context.cluster.listVms(namespace);
    expect(vms.map((vm) => vm.metadata.name)).toEqual(['golden']);
    expect(await admin.context.cluster.listLeases(namespace)).toEqual([]);
  });
});
