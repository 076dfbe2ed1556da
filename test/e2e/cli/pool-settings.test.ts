import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { configMapKind } from '../../../src/kube/resource-kinds.js';
import { cliFor, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf } = cliFor(cluster);

describe('corral-vdi pool settings', () => {
  it('sets a reclaim action and an idle timeout with pool set, shows them in pool list, and refuses bad ones', async () => {
    const namespace = await poolOf('cli-settings', 1);
    const set = await cli([
      'pool',
      'set',
      'devpool',
      '--reclaim-action',
      'notify',
      '--reclaim-webhook',
      'https://hooks.example.com/vdi',
      '--idle-timeout',
      '45m',
      '-n',
      namespace,
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(
      'pool "devpool" set: reclaim: notify → https://hooks.example.com, idle timeout: 45m',
    );

    const listed = await cli(['pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pools: unknown[] }>(listed).pools).toEqual([
      expect.objectContaining({
        reclaimAction: 'notify',
        settings: {
          reclaimAction: 'notify',
          reclaimWebhook: 'https://hooks.example.com/vdi',
          idleTimeoutMs: 2_700_000,
        },
      }),
    ]);
    const text = await cli(['pool', 'list', '-n', namespace]);
    expect(text.stdout).toContain('reclaim: notify → https://hooks.example.com, idle timeout: 45m');

    const kube = new KubeCluster(cluster().kubeConfig);
    const before = await kube.resource(configMapKind).in(namespace).get('corral-vdi-pool-devpool');
    for (const bad of [
      ['--reclaim-action', 'hibernate'],
      ['--reclaim-action', 'recreate'],
      ['--reclaim-webhook', 'http://hooks.example.com/vdi'],
      ['--reclaim-webhook', 'http://127.0.0.1:9000/hook'],
    ]) {
      const refused = await cli(['pool', 'set', 'devpool', ...bad, '-n', namespace, '-o', 'json']);
      expect(refused.code, `${bad.join(' ')}: ${refused.stdout}`).not.toBe(0);
      expect(jsonOf<{ error: { code: string } }>(refused).error.code).toBe('INVALID_INPUT');
    }
    const after = await kube.resource(configMapKind).in(namespace).get('corral-vdi-pool-devpool');
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);

    const loopback = await cli([
      'pool',
      'set',
      'devpool',
      '--reclaim-webhook',
      'http://127.0.0.1:9000/hook',
      '--allow-http-webhook',
      '-n',
      namespace,
    ]);
    expect(loopback.code, loopback.stderr).toBe(0);
  });
});
