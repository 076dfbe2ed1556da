import { expect, it } from 'vitest';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

it('scratch: claim, release, claim again leaves the member running', async () => {
  const namespace = await createTestNamespace(cluster(), 'scratch');
  await createPoolMembers(cluster(), namespace, 'alpha', 1);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
  const kube = vdi.context.cluster;
  const log: string[] = [];
  for (let round = 0; round < 15; round += 1) {
    const a = await vdi.claim({ pool: 'alpha', identity: 'a@x' });
    log.push(`${round} claim a ${a.startError ?? 'ok'}`);
    await vdi.release({ member: a.member, identity: 'a@x' });
    const b = await vdi.claim({ pool: 'alpha', identity: 'b@x' });
    log.push(`${round} claim b ${b.startError ?? 'ok'}`);
    const vm = await kube.getVm(namespace, 'alpha-1');
    log.push(`  spec ${vm?.spec.runStrategy} status ${vm?.status?.printableStatus}`);
    try {
      await waitFor(() => kube.getVm(namespace, 'alpha-1'), {
        describe: 'running',
        timeoutMs: 5000,
        until: (v) => v?.status?.printableStatus === 'Running',
      });
    } catch (error) {
      const vmi = await kube.getVmi(namespace, 'alpha-1');
      console.log(
        log.join('\n'),
        JSON.stringify((await kube.getVm(namespace, 'alpha-1'))?.spec.runStrategy),
        JSON.stringify((await kube.getVm(namespace, 'alpha-1'))?.status),
        JSON.stringify(vmi?.status),
      );
      throw error;
    }
    await vdi.release({ member: b.member, identity: 'b@x' });
  }
  expect(true).toBe(true);
});
