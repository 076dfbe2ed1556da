import diagnostics from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { apiFailureOf, toVdiError } from '../../../src/kube/errors.js';
import { rawRequest } from '../../../src/kube/raw-request.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

// No simulator: its own requests would count among the connections this file counts.
const cluster = useSharedCluster();

let connections = 0;
const countConnection = () => {
  connections++;
};
beforeAll(() => diagnostics.subscribe('net.client.socket', countConnection));
afterAll(() => diagnostics.unsubscribe('net.client.socket', countConnection));

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the kube adapter against a real apiserver', () => {
  it('reads the bare 404 of an API group the apiserver does not serve as a retryable outage', async () => {
    const path = '/apis/not-served.corral.dev/v1/namespaces/default/things/one';
    const answer = await failureOf(rawRequest(cluster().kubeConfig, 'GET', path));
    expect(apiFailureOf(answer)).toMatchObject({ status: 404, isStatus: false });
    const error = toVdiError(answer, 'read a thing');
    expect(error.code).toBe('CLUSTER_UNAVAILABLE');
    expect(error.retryable).toBe(true);
  });

  it('still reads a missing object of a served group as NOT_FOUND, and a get of it as nothing', async () => {
    const namespace = await createTestNamespace(cluster(), 'missing');
    const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/none`;
    const answer = await failureOf(rawRequest(cluster().kubeConfig, 'GET', path));
    expect(isVdiError(toVdiError(answer, 'read a Lease'), 'NOT_FOUND')).toBe(true);
    await expect(new KubeCluster(cluster().kubeConfig).getLease(namespace, 'none')).resolves.toBeUndefined();
  });

  it('sends a run of API client and raw requests over the connection the first one opened', async () => {
    const namespace = await createTestNamespace(cluster(), 'keep-alive');
    const kube = new KubeCluster(cluster().kubeConfig);
    await kube.listLeases(namespace);
    const before = connections;
    for (let index = 0; index < 20; index++) {
      await kube.listLeases(namespace);
      await kube.getLease(namespace, `none-${index}`);
      await rawRequest(
        cluster().kubeConfig,
        'GET',
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      );
    }
    expect(connections - before).toBe(0);
  });

  it('tells its observers each request with its answer and each Lease write refused with 409, until removed', async () => {
    const namespace = await createTestNamespace(cluster(), 'observed');
    const kube = new KubeCluster(cluster().kubeConfig);
    const heard: string[] = [];
    const stop = kube.observe({
      request: (verb, code) => heard.push(`${verb} ${code}`),
      leaseConflict: (verb) => heard.push(`conflict on ${verb}`),
    });
    const lease = { metadata: { name: 'observed' }, spec: { holderIdentity: 'alice' } };
    const created = await kube.createLease(namespace, lease);
    await expect(kube.createLease(namespace, lease)).rejects.toMatchObject({ code: 'CONFLICT' });
    await kube.getLease(namespace, 'absent');
    await expect(
      kube.replaceLease(namespace, { ...created, metadata: { ...created.metadata, resourceVersion: '1' } }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    stop();
    await kube.listLeases(namespace);
    expect(heard).toEqual([
      'create 2xx',
      'create 409',
      'conflict on create',
      'get 404',
      'update 409',
      'conflict on update',
    ]);
  });
});
