import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { usePrivateCluster } from '../../support/cluster.js';
import { kubevirtObjects, sampleVm } from './simulator-support.js';

// its own control plane: stopping the shared cluster's simulator would take KubeVirt away from every other file
const cluster = usePrivateCluster({ kubevirt: 'simulated', nodeAgent: false });

async function webhookNames(): Promise<string[]> {
  const api = cluster().kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const { items } = await api.listValidatingWebhookConfiguration();
  return items.flatMap((item) => (item.webhooks ?? []).map((webhook) => webhook.name)).sort();
}

describe("the simulator's admission webhooks", () => {
  it("are registered while it runs, KubeVirt's failing closed, and removed when it stops", async () => {
    const api = cluster().kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const { items } = await api.listValidatingWebhookConfiguration();
    const policies = Object.fromEntries(
      items.flatMap((item) => (item.webhooks ?? []).map((webhook) => [webhook.name, webhook.failurePolicy])),
    );
    expect(policies).toEqual({
      'virtualmachine-validator.kubevirt.io': 'Fail',
      'vm-clone-validator.kubevirt.io': 'Fail',
      'vm-start.sim.kubevirt.corral.dev': 'Ignore',
    });

    await cluster().simulator?.stop();
    expect(await webhookNames()).toEqual([]);
    // nothing answers for KubeVirt any more, so nothing refuses a VM KubeVirt would
    const objects = kubevirtObjects(cluster().kubeConfig, 'default');
    const created = await objects.createVm(sampleVm('both-run-fields', { running: false }));
    expect(created.spec).toMatchObject({ running: false, runStrategy: 'Halted' });
  });
});
