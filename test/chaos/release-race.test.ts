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
    () => 'released',
    (error: unknown) => (isVdiError(error) ? error.code : String(error)),
  );

// Found by the chaos storm (seed 5, beta-3): two releases of one claim (two tabs, a holder and an admin) both resume
// the same releasing session; the second finds the first's clone running and answers RECREATE_FAILED, "so it stays
// claimed … marked releasing", while the first ended the claim. Now the one that finds the clone finished by the other
// counts it done, and a release whose claim ended meanwhile answers as a repeated release.
it('ends one ephemeral claim released twice at once, and neither release says the claim stays', async () => {
  const namespace = await createTestNamespace(cluster(), 'release-race');
  const { kubeConfig } = cluster();
  const kube = new KubeCluster(kubeConfig);
  const vdi = createVdi({ kubeConfig, namespace, clock: createTestClock() });
  await kube.createVm(namespace, stoppedVm('golden'));
  await vdi.createPool({ name: 'eph', from: 'golden', size: 1, ephemeral: true });
  const { member } = await vdi.claim({ pool: 'eph', identity: 'ana' });

  // The simulator leaves clones alone, so the first release stays in the middle of recreating the member: its
  // replacement is being staged
  await setSimulatorPaused(kubeConfig, namespace, true);
  const first = settle(vdi.release({ member, identity: 'ana' }));
  await waitFor(() => kube.getClone(namespace, `${member}-staged-clone`), {
    describe: 'the first release to clone again',
  });
  const second = settle(vdi.release({ member, identity: 'ana' }));
  await setSimulatorPaused(kubeConfig, namespace, false);

  const outcomes = await Promise.all([first, second]);
  const lease = await kube.getLease(namespace, `corral-vdi-${member}`);
  expect(lease).toBeUndefined();
  expect(outcomes).toContain('released');
  for (const outcome of outcomes) expect(['released', 'CLAIM_ENDED']).toContain(outcome);
});
