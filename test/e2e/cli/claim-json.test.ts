import { describe, expect, it } from 'vitest';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { waitForRunningVmi } from '../../support/cluster.js';
import { cliFor, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf } = cliFor(cluster);

describe('corral-vdi claim -o json', () => {
  it('says warm for a member the spare keeper runs, and not for one the claim had to start', async () => {
    const namespace = await poolOf('claim-json', 2);
    const set = await cli(['pool', 'set', 'devpool', '--min-ready', '1', '-n', namespace]);
    expect(set.code, set.stderr).toBe(0);
    const vdi = createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock: createTestClock(new Date()),
    });
    const pass = await vdi.keepSpares({ namespace });
    const spare = pass.kept[0]?.started[0] ?? '';
    expect(spare).toMatch(/^devpool-[12]$/);
    await waitForRunningVmi(vdi.context.cluster, namespace, spare);

    const warm = await cli(['claim', 'devpool', '--user', 'alice', '-n', namespace, '-o', 'json']);
    expect(warm.code, warm.stderr).toBe(0);
    expect(jsonOf(warm)).toMatchObject({
      desktop: { member: spare, owner: 'alice', running: true },
      retried: false,
      adopted: false,
      warm: true,
      startError: null,
      connect: `corral-vdi connect ${spare} -n ${namespace}`,
    });

    const cold = await cli(['claim', 'devpool', '--user', 'bob', '-n', namespace, '-o', 'json']);
    expect(cold.code, cold.stderr).toBe(0);
    const body = jsonOf<{ desktop: { member: string } }>(cold);
    expect(body.desktop.member).not.toBe(spare);
    expect(body).toMatchObject({ desktop: { owner: 'bob' }, retried: false, warm: false, startError: null });
  });
});
