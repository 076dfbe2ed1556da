import { describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  await createPoolMembers(cluster(), namespace, 'devpool', 1);
  const kube = new KubeCluster(cluster().kubeConfig, { retries: 0 });
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock: createTestClock() });
  const ctx: VdiContext = { ...vdi.context, cluster: kube, backends: {} };
  const backend = createVmBackend(ctx);
  const ref = { namespace, member: 'devpool-1' };
  const running = () =>
    waitFor(() => kube.getVmi(namespace, 'devpool-1'), {
      describe: 'the VMI of devpool-1 to run',
      until: (vmi) => vmi?.status?.phase === 'Running',
    });
  return { kube, backend, ref, running };
}

describe("the VM backend's start", () => {
  it('writes the run field of a stopped VM, and takes a VM that runs and is meant to as already running', async () => {
    const { backend, ref, running } = await setUp('start-running');
    expect(await backend.startMember(ref)).toBe('changed');
    await running();
    expect(await backend.startMember(ref)).toBe('already');
  });

  it('refuses a start written on a read older than a stop, and leaves the stop in force', async () => {
    const { kube, backend, ref, running } = await setUp('start-as-read');
    await backend.startMember(ref);
    await running();
    const before = await backend.readMember(ref);
    expect(await kube.stopVm(ref.namespace, ref.member)).toBe('changed');
    const late = await backend.startMember(ref, before).catch((error: unknown) => error);
    expect(isVdiError(late, 'CONFLICT')).toBe(true);
    expect((late as Error).message).toMatch(/changed since it was read/);
    expect((await kube.getVm(ref.namespace, ref.member))?.spec.runStrategy).toBe('Halted');
    // read after the stop has settled (KubeVirt's status writes change the VM too), the start is taken
    await waitFor(() => backend.readMember(ref), {
      describe: 'devpool-1 to stop',
      until: (facts) => facts?.power === 'stopped' && !facts.previousInstance,
    });
    // a status write of KubeVirt's may still land between a read and the start: read again, as the CONFLICT says
    const started = await waitFor(async () => await backend.startMember(ref, await backend.readMember(ref)), {
      describe: 'a start on a fresh read to be taken',
    });
    expect(started).toBe('changed');
    expect((await kube.getVm(ref.namespace, ref.member))?.spec.runStrategy).toBe('Always');
  });
});
