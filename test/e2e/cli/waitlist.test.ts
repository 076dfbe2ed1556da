import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { waitersSelector } from '../../../src/waitlist/waitlist-keys.js';
import { cliEnv, cliFor, collectOutput, startCli, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf } = cliFor(cluster);

// Every test works in a namespace of its own, so the file's tests run side by side.
describe.concurrent('corral-vdi claim --wait', () => {
  it('queues, prints the position as it moves, and claims the member once it is unassigned', async () => {
    const namespace = await poolOf('claim-wait', 1);
    const mine = await cli(['claim', 'devpool', '-n', namespace]);
    expect(mine.code, mine.stderr).toBe(0);
    expect(mine.stdout).toMatch(/^claimed devpool-1 → admin-tester\n/);
    const args = ['claim', 'devpool', '--wait', '-n', namespace, '--kubeconfig', cluster().kubeconfigPath];
    const bob = startCli([...args, '--user', 'bob'], cliEnv());
    const bobSays = collectOutput(bob);
    await bobSays.waitFor(/waiting for a member of devpool: 1 of 1 in the queue/);
    const carol = startCli([...args, '--user', 'carol'], cliEnv());
    const carolSays = collectOutput(carol);
    await carolSays.waitFor(/2 of 2 in the queue/);

    const unassigned = await cli(['unassign', 'devpool-1', '-n', namespace]);
    expect(unassigned.code, unassigned.stderr).toBe(0);
    const [code] = await once(bob, 'exit');
    expect(code, bobSays.text()).toBe(0);
    expect(bobSays.text()).toMatch(/claimed devpool-1 → bob/);
    await carolSays.waitFor(/1 of 1 in the queue/);
    // Ctrl-C leaves the queue
    carol.kill('SIGINT');
    const [carolCode] = await once(carol, 'exit');
    expect(carolCode).toBe(1);
    expect(carolSays.text()).toMatch(/interrupted: leaving the queue/);
    expect(
      await new KubeCluster(cluster().kubeConfig).listLeases(namespace, waitersSelector('devpool')),
    ).toEqual([]);
  });

  it('gives up after --wait-timeout with WAIT_TIMED_OUT, and refuses a timeout of 0 or one without --wait', async () => {
    const namespace = await poolOf('claim-timeout', 1);
    expect((await cli(['assign', 'devpool', 'alice', '-n', namespace])).code).toBe(0);
    const timedOut = await cli([
      'claim',
      'devpool',
      '--wait',
      '--wait-timeout',
      '1s',
      '-n',
      namespace,
      '--verbose',
    ]);
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toMatch(/code: WAIT_TIMED_OUT/);
    for (const flags of [
      ['--wait', '--wait-timeout', '0s'],
      ['--wait-timeout', '1m'],
    ]) {
      const refused = await cli(['claim', 'devpool', ...flags, '-n', namespace]);
      expect(refused.code, flags.join(' ')).toBe(2);
    }
    expect(
      await new KubeCluster(cluster().kubeConfig).listLeases(namespace, waitersSelector('devpool')),
    ).toEqual([]);
  });
});
