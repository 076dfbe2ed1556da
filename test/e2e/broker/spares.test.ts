import { describe, expect, it } from 'vitest';
import { claimedDesktopSchema } from '../../../src/broker/schemas.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { useBrokers } from './broker-support.js';

const cluster = useSharedCluster();
const brokers = useBrokers();

describe('the broker keeps warm spares', () => {
  it('starts a spare on its keeper pass, and a claim through the API gets it warm', async () => {
    const namespace = await createTestNamespace(cluster(), 'broker-spares');
    await createPoolMembers(cluster(), namespace, 'devpool', 2);
    await createPoolMembers(cluster(), namespace, 'plain', 1);
    const api = await brokers.start(cluster(), namespace, createTestClock(new Date()));
    await api.vdi.setPool({ name: 'devpool', minReady: 1 });

    const pass = await api.broker.keepSpares();
    expect(pass).toMatchObject({
      failed: [],
      kept: [{ id: `vm/${namespace}/devpool`, started: ['devpool-1'] }],
    });
    const kube = api.vdi.context.cluster;
    await waitFor(
      async () => (await kube.getVm(namespace, 'devpool-1'))?.status?.printableStatus === 'Running',
      {
        describe: 'the spare to run',
      },
    );

    const answer = await api.call('POST', `/api/vdi/pools/vm/${namespace}/devpool/claim`, {
      as: 'alice@example.com',
    });
    expect(answer.status).toBe(200);
    expect(claimedDesktopSchema.parse(answer.body)).toMatchObject({
      member: 'devpool-1',
      warm: true,
      running: true,
    });
    const cold = await api.call('POST', `/api/vdi/pools/vm/${namespace}/plain/claim`, {
      as: 'alice@example.com',
    });
    expect(claimedDesktopSchema.parse(cold.body)).toMatchObject({ member: 'plain-1', warm: false });
  });
});
