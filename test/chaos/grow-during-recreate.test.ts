import { expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import { KubeCluster } from '../../src/kube/cluster.js';
import { setSimulatorPaused } from '../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../src/testing/test-clock.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

const settle = (call: Promise<unknown>) =>
  call.then(
    (result) => ({ result }),
    (error: unknown) => ({ code: isVdiError(error) ? error.code : String(error) }),
  );

// Found by the chaos storm (seed 5, beta-1): a release recreating an ephemeral member deletes its VM first, so a grow
// meanwhile takes the member's name; the grow found the recreate's clone, failed, and its clean-up deleted that clone,
// so the release failed too. A name a live claim holds is now taken, and such a member still counts.
it('grows past a member that a release is recreating, and both calls finish', async () => {
  const namespace = await createTestNamespace(cluster(), 'grow-recreate');
  const { kubeConfig } = cluster();
  const kube = new KubeCluster(kubeConfig);
  const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
  await kube.createVm(namespace, stoppedVm('golden'));
  await vdi.createPool({ name: 'eph', from: 'golden', size: 2, ephemeral: true });
  const { member } = await vdi.assign({ pool: 'eph', identity: 'ana' });

  // The simulator leaves clones alone, so the release stays in the middle of recreating the member.
  await setSimulatorPaused(kubeConfig, namespace, true);
  const release = settle(vdi.release({ member, identity: 'ana' }));
  await waitFor(() => kube.getClone(namespace, `${member}-clone`), {
    describe: 'the release to clone again',
  });
  const grow = settle(vdi.resizePool({ name: 'eph', size: 3 }));
  await setSimulatorPaused(kubeConfig, namespace, false);

  expect(await grow).toMatchObject({ result: { added: ['eph-3'] } });
  expect(await release).toMatchObject({ result: { holder: 'ana', reset: 'recreated' } });
  expect(await kube.getVm(namespace, member)).toBeDefined();
});
