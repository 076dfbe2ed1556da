import { describe, expect, it } from 'vitest';
import { cliFor, createGoldenVm, createNamespace, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli } = cliFor(cluster);

describe('corral-vdi per-user limits of a pool', () => {
  it('sets a VM pool limit with pool create, shows it, changes it with pool set and clears it with 0', async () => {
    const namespace = await createNamespace(cluster(), 'cli-limit');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await cli([
      'pool',
      'create',
      'gpupool',
      '--from',
      'golden-desktop',
      '--size',
      '1',
      '--max-desktops-per-user',
      '2',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(jsonOf<{ pool: { settings: unknown } }>(created).pool.settings).toEqual({ maxDesktopsPerUser: 2 });

    const set = await cli(['pool', 'set', 'gpupool', '--max-desktops-per-user', '1', '-n', namespace]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('max desktops per user: 1');

    const cleared = await cli(['pool', 'set', 'gpupool', '--max-desktops-per-user', '0', '-n', namespace]);
    expect(cleared.code, cleared.stderr).toBe(0);
    const listed = await cli(['pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pools: Array<{ settings: unknown }> }>(listed).pools[0]?.settings).toEqual({});

    const usage = await cli(['pool', 'set', 'gpupool', '--max-desktops-per-user', 'two', '-n', namespace]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--max-desktops-per-user takes a whole number (0 clears it), not "two"');
  });

  it('sets a container pool limit with ct-pool apply and shows it in ct-pool get', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-limit');
    const applied = await cli([
      'ct-pool',
      'apply',
      'devbox',
      '--image',
      'ghcr.io/acme/devbox:1.4',
      '--size',
      '1',
      '--max-desktops-per-user',
      '1',
      '-n',
      namespace,
    ]);
    expect(applied.code, applied.stderr).toBe(0);
    const got = await cli(['ct-pool', 'get', 'devbox', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pool: { spec: { maxDesktopsPerUser: number } } }>(got).pool.spec.maxDesktopsPerUser).toBe(
      1,
    );
    const text = await cli(['ct-pool', 'get', 'devbox', '-n', namespace]);
    expect(text.stdout).toContain('max desktops per user: 1');
  });
});
