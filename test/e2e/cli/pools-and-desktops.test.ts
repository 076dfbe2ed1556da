import { describe, expect, it } from 'vitest';
import {
  cliEnv,
  cliFor,
  createGoldenVm,
  createNamespace,
  jsonOf,
  runCliOnTerminal,
  useCliCluster,
} from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf, assignedMember } = cliFor(cluster);

// Every test works in a namespace of its own, so the file's tests run side by side.
describe.concurrent('corral-vdi pool create, list, resize and delete', () => {
  it('creates a pool and prints its members, then lists them free and stopped', async () => {
    const namespace = await createNamespace(cluster(), 'create');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await cli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '3',
      '-n',
      namespace,
    ]);
    expect(created).toEqual({
      code: 0,
      stdout: 'pool "devpool" created: 3 members\n  devpool-1\n  devpool-2\n  devpool-3\n',
      stderr: '',
    });

    const listed = await cli(['pool', 'list'], cliEnv({ CORRAL_NAMESPACE: namespace }));
    expect(listed).toEqual({
      code: 0,
      stdout: [
        `devpool  (ns/${namespace}, 3 members; reclaim: stop)`,
        '  devpool-1                free                     stopped',
        '  devpool-2                free                     stopped',
        '  devpool-3                free                     stopped',
        '',
      ].join('\n'),
      stderr: '',
    });
  });

  it('answers pool create and pool list with -o json in the documented shape', async () => {
    const namespace = await createNamespace(cluster(), 'json');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const created = await cli([
      'pool',
      'create',
      'kiosk',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '--ephemeral',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(jsonOf(created)).toEqual({
      pool: {
        id: `vm/${namespace}/kiosk`,
        name: 'kiosk',
        namespace,
        source: 'golden-desktop',
        ephemeral: true,
        minReady: null,
        members: ['kiosk-1', 'kiosk-2'],
        reclaimAction: 'recreate',
        settings: {},
      },
    });

    const listed = await cli(['pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf(listed)).toEqual({
      pools: [
        {
          id: `vm/${namespace}/kiosk`,
          name: 'kiosk',
          namespace,
          counts: { members: 2, free: 2, claimed: 0 },
          reclaimAction: 'recreate',
          settings: {},
          members: ['kiosk-1', 'kiosk-2'].map((name) => ({
            name,
            id: `vm/${namespace}/${name}`,
            status: 'free',
            holder: null,
            since: null,
            expiresAt: null,
            power: 'Stopped',
            ephemeral: true,
            source: 'golden-desktop',
          })),
        },
      ],
    });
  });

  it('lists the pools of every namespace with -A, and says when a namespace has none', async () => {
    const first = await poolOf('all-a', 1);
    const second = await poolOf('all-b', 1);
    const all = jsonOf<{ pools: Array<{ id: string }> }>(await cli(['pool', 'list', '-A', '-o', 'json']));
    const ids = all.pools.map((pool) => pool.id);
    expect(ids).toContain(`vm/${first}/devpool`);
    expect(ids).toContain(`vm/${second}/devpool`);

    const empty = await createNamespace(cluster(), 'empty');
    expect(await cli(['pool', 'list', '-n', empty])).toEqual({
      code: 0,
      stdout: `no pools in namespace ${empty}\n`,
      stderr: '',
    });
    const both = await cli(['pool', 'list', '-A', '-n', empty]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('error: pass either -n or -A, not both');
  });

  it('draws a progress bar on a terminal while it clones', async () => {
    const namespace = await createNamespace(cluster(), 'progress');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const run = await runCliOnTerminal([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    expect(run.code, run.stdout).toBe(0);
    const clear = '\r\u001b[2K';
    expect(run.stdout).toContain(`${clear}[${'#'.repeat(12)}${'-'.repeat(12)}] 1/2 devpool-`);
    expect(run.stdout).toContain(`${clear}[${'#'.repeat(24)}] 2/2 devpool-`);
    expect(run.stdout).toContain('pool "devpool" created: 2 members');
  });

  it('grows a pool, shrinks it by its free members, and refuses to shrink past an assigned one', async () => {
    const namespace = await poolOf('resize', 2);
    const grown = await cli(['pool', 'resize', 'devpool', '--size', '4', '-n', namespace]);
    expect(grown).toEqual({
      code: 0,
      stdout: 'pool "devpool" resized: 2 → 4 members\n  + devpool-3\n  + devpool-4\n',
      stderr: '',
    });
    const unchanged = await cli(['pool', 'resize', 'devpool', '--size', '4', '-n', namespace]);
    expect(unchanged.stdout).toBe('pool "devpool" already has 4 members\n');

    const shrunk = await cli(['pool', 'resize', 'devpool', '--size', '3', '-n', namespace, '-o', 'json']);
    expect(jsonOf(shrunk)).toEqual({
      resized: {
        id: `vm/${namespace}/devpool`,
        from: 4,
        size: 3,
        added: [],
        removed: ['devpool-4'],
        skipped: [],
      },
    });

    for (const user of ['alice', 'bob', 'carol']) await assignedMember(namespace, user);
    const refused = await cli(['pool', 'resize', 'devpool', '--size', '1', '-n', namespace]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: .*Unassign members with "corral-vdi unassign MEMBER" first\.\n$/);
  });

  it('refuses to delete a pool with assigned members unless --force, and deletes it then', async () => {
    const namespace = await poolOf('delete', 2);
    const member = await assignedMember(namespace, 'alice');
    const refused = await cli(['pool', 'delete', 'devpool', '-n', namespace]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`error: Pool "devpool" has claimed members: ${member} (alice).`);
    expect(refused.stderr).toMatch(
      /Unassign them with "corral-vdi unassign MEMBER", or run it again with --force\.\n$/,
    );

    const forced = await cli(['pool', 'delete', 'devpool', '--force', '-n', namespace]);
    expect(forced).toEqual({
      code: 0,
      stdout: 'pool "devpool" deleted: 2 members, assigned ones included\n',
      stderr: '',
    });
    expect((await cli(['pool', 'list', '-n', namespace])).stdout).toBe(
      `no pools in namespace ${namespace}\n`,
    );

    const again = await poolOf('delete-json', 1);
    const json = await cli(['pool', 'delete', 'devpool', '-n', again, '-o', 'json']);
    expect(jsonOf(json)).toEqual({
      deleted: { id: `vm/${again}/devpool`, members: ['devpool-1'], leases: 0, clones: 0, forced: false },
    });
    const gone = await cli(['pool', 'delete', 'devpool', '-n', again]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: Pool "devpool" has no members in namespace/);
  });
});
