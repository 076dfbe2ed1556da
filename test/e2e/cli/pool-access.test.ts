import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { configMapKind } from '../../../src/kube/resource-kinds.js';
import { cliFor, createGoldenVm, createNamespace, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli } = cliFor(cluster);

describe('corral-vdi pool entitlements', () => {
  it('creates a pool for some groups, changes who may claim with pool set, and shows it in pool list', async () => {
    const namespace = await createNamespace(cluster(), 'cli-access');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await cli([
      'pool',
      'create',
      'gpupool',
      '--from',
      'golden-desktop',
      '--size',
      '1',
      '--allow-group',
      'ml',
      '--allow-group',
      'research',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(jsonOf<{ pool: { settings: unknown } }>(created).pool.settings).toEqual({
      allowedGroups: ['ml', 'research'],
    });

    const set = await cli(['pool', 'set', 'gpupool', '--allow-user', 'alice@example.com', '-n', namespace]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('groups: ml research, users: alice@example.com');

    const listed = await cli(['pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pools: Array<{ settings: unknown }> }>(listed).pools[0]?.settings).toEqual({
      allowedGroups: ['ml', 'research'],
      allowedUsers: ['alice@example.com'],
    });

    const kube = new KubeCluster(cluster().kubeConfig);
    const before = await kube.resource(configMapKind).in(namespace).get('corral-vdi-pool-gpupool');
    const refused = await cli([
      'pool',
      'set',
      'gpupool',
      '--allow-group',
      ' ml',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(refused.code).toBe(1);
    expect(jsonOf<{ error: { code: string } }>(refused).error.code).toBe('INVALID_INPUT');
    const after = await kube.resource(configMapKind).in(namespace).get('corral-vdi-pool-gpupool');
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
  });

  it('applies a container pool for some users and shows them in ct-pool get', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-access');
    const applied = await cli([
      'ct-pool',
      'apply',
      'devbox',
      '--image',
      'ghcr.io/acme/devbox:1.4',
      '--size',
      '1',
      '--allow-user',
      'alice@example.com',
      '--allow-user',
      'bob@example.com',
      '-n',
      namespace,
    ]);
    expect(applied.code, applied.stderr).toBe(0);
    const got = await cli(['ct-pool', 'get', 'devbox', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pool: { spec: { allowedUsers: string[] } } }>(got).pool.spec.allowedUsers).toEqual([
      'alice@example.com',
      'bob@example.com',
    ]);
    const text = await cli(['ct-pool', 'get', 'devbox', '-n', namespace]);
    expect(text.stdout).toContain('users: alice@example.com bob@example.com');
  });
});
