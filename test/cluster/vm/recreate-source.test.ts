import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { recreateMember } from '../../../src/vm/recreate-vm-member.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

describe('recreating an ephemeral member', () => {
  it('refuses a member whose source annotation names itself before deleting it, since KubeVirt refuses a clone into its own source', async () => {
    const namespace = await createTestNamespace(cluster(), 'recreate-self');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
    const member = await vdi.context.cluster.createVm(namespace, {
      metadata: {
        name: 'eph-1',
        labels: { 'corral.dev/vdi-pool': 'eph', 'corral.dev/vdi-ephemeral': 'true' },
        annotations: { 'corral.dev/vdi-source': 'eph-1' },
      },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
    });

    const error = await recreateMember(vdi.context, { namespace, vm: 'eph-1' }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toContain('names itself as its golden VM');
    expect((await vdi.context.cluster.getVm(namespace, 'eph-1'))?.metadata.uid).toBe(member.metadata.uid);
    expect(await vdi.context.cluster.listClones(namespace)).toEqual([]);
  });
});
