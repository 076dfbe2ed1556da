import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import {
  createTestNamespace,
  stoppedVm,
  usePrivateCluster,
  useSharedCluster,
  waitForRunningVmi,
} from '../../support/cluster.js';

const shared = useSharedCluster();
// a second control plane on the same machine, as another test run or a dev cluster beside this one
const second = usePrivateCluster({ kubevirt: 'simulated', nodeAgent: false });

async function runningAddress(kube: KubeCluster, namespace: string): Promise<string> {
  await kube.createVm(namespace, {
    ...stoppedVm('desk-1'),
    spec: { ...stoppedVm('desk-1').spec, runStrategy: 'Always' },
  });
  const vmi = await waitForRunningVmi(kube, namespace, 'desk-1');
  return vmi.status?.interfaces?.[0]?.ipAddress ?? '';
}

const range16 = (address: string) => address.split('.').slice(0, 2).join('.');

describe('VM addresses on a machine with two control planes', () => {
  it("come from different /16s of 127.0.0.0/8, so that one run's connection to its guest never reaches the other's", async () => {
    const sharedKube = new KubeCluster(shared().kubeConfig);
    const secondKube = new KubeCluster(second().kubeConfig);
    const [inShared, inSecond] = await Promise.all([
      createTestNamespace(shared(), 'addresses').then((namespace) => runningAddress(sharedKube, namespace)),
      createTestNamespace(second(), 'addresses').then((namespace) => runningAddress(secondKube, namespace)),
    ]);
    expect(inShared).toMatch(/^127\./);
    expect(inSecond).toMatch(/^127\./);
    expect(range16(inSecond)).not.toBe(range16(inShared));
  });
});
