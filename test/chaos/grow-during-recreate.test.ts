import { expect, it } from 'vitest';
import { releaseMember } from '../../src/claims/release-desktop.js';
import { isVdiError } from '../../src/errors.js';
import { simulatorAnnotations } from '../../src/testing/kubevirt/fault-knobs.js';
import { setSimulatorPaused } from '../../src/testing/kubevirt/namespace-clock.js';
import { createTestClock } from '../../src/testing/test-clock.js';
import { waitFor } from '../../src/testing/wait-for.js';
import { createVdi } from '../../src/vdi.js';
import { createVmBackend } from '../../src/vm/vm-backend.js';
import { CloneFaultCluster } from '../support/clone-faults.js';
import { createTestNamespace, stoppedVm, useSharedCluster } from '../support/cluster.js';

const cluster = useSharedCluster();

const settle = (call: Promise<unknown>) =>
  call.then(
    (result) => ({ result }),
    (error: unknown) => ({ code: isVdiError(error) ? error.code : String(error) }),
  );

// Found by the chaos storm (seed 5, beta-1): a release recreating an ephemeral member deletes its VM, so a grow
// meanwhile takes the member's name; the grow found the recreate's clone, failed, and its clean-up deleted that clone,
// so the release failed too. A name a live claim holds is now taken, and such a member still counts.
it('grows past a member that a release is recreating, and both calls finish', async () => {
  const namespace = await createTestNamespace(cluster(), 'grow-recreate');
  const { kubeConfig } = cluster();
  const kube = new CloneFaultCluster(kubeConfig);
  const { context } = createVdi({ kubeConfig, namespace, clock: createTestClock() });
  const ctx = { ...context, cluster: kube };
  ctx.backends = { vm: createVmBackend(ctx) };
  const vdi = createVdi({ kubeConfig, namespace, clock: context.clock });
  await kube.createVm(namespace, stoppedVm('golden'));
  await vdi.createPool({ name: 'eph', from: 'golden', size: 2, ephemeral: true });
  const { member } = await vdi.assign({ pool: 'eph', identity: 'ana' });

  // The member's clone takes a while, and the simulator is paused once it began: the release stays between the
  // member's delete and its clone (its replacement staged).
  kube.faults[member] = { [simulatorAnnotations.phaseDelayMs]: '1500' };
  const release = settle(releaseMember(ctx, { namespace, member, actor: 'ana', asAdmin: false }));
  await waitFor(() => kube.getClone(namespace, `${member}-clone`), {
    describe: 'the release to clone again',
  });
  await setSimulatorPaused(kubeConfig, namespace, true);
  const grow = settle(vdi.resizePool({ name: 'eph', size: 3 }));
  await setSimulatorPaused(kubeConfig, namespace, false);

  expect(await grow).toMatchObject({ result: { added: ['eph-3'] } });
  expect(await release).toMatchObject({ result: { holder: 'ana', reset: 'recreated' } });
  expect(await kube.getVm(namespace, member)).toBeDefined();
});
