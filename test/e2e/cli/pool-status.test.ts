import { describe, expect, it } from 'vitest';
import {
  cliFor,
  collectOutput,
  createGoldenVm,
  createNamespace,
  jsonOf,
  startCli,
  useCliCluster,
} from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf, assignedMember } = cliFor(cluster);

// Every test works in a namespace of its own, so the file's tests run side by side.
describe.concurrent('corral-vdi pool set and pool status', () => {
  it('refuses a --min-ready above the size, negative or not whole, creating and writing nothing', async () => {
    const namespace = await createNamespace(cluster(), 'cli-min-ready');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const create = ['pool', 'create', 'devpool', '--from', 'golden-desktop', '--size', '2', '-n', namespace];
    const above = await cli([...create, '--min-ready', '3']);
    expect(above).toMatchObject({ code: 1, stdout: '' });
    expect(above.stderr).toContain('minReady 3 is not valid for a pool of 2 members');
    expect(jsonOf(await cli(['pool', 'list', '-n', namespace, '-o', 'json']))).toEqual({ pools: [] });

    const made = jsonOf<{ pool: { minReady: number } }>(
      await cli([...create, '--min-ready', '1', '-o', 'json']),
    );
    expect(made.pool.minReady).toBe(1);
    for (const value of ['--min-ready=-1', '--min-ready=1.5', '--min-ready=3', '--min-ready=two']) {
      const run = await cli(['pool', 'set', 'devpool', value, '-n', namespace, '-o', 'json']);
      expect(run.code).toBe(1);
      expect(jsonOf<{ error: { code: string } }>(run).error.code).toBe('INVALID_INPUT');
    }
    const status = jsonOf<{ status: { minReady: number } }>(
      await cli(['pool', 'status', 'devpool', '-n', namespace, '-o', 'json']),
    );
    expect(status.status.minReady).toBe(1);
    const set = await cli(['pool', 'set', 'devpool', '--min-ready', '2', '-n', namespace]);
    expect(set).toEqual({ code: 0, stdout: 'pool "devpool": minReady 2 on 2 members\n', stderr: '' });
  });

  it('shows each member with holder, phase, session and warm spare, as text and JSON', async () => {
    const namespace = await poolOf('cli-status', 2);
    const member = await assignedMember(namespace, 'alice@example.com');
    const text = await cli(['pool', 'status', 'devpool', '-n', namespace]);
    expect(text.code, text.stderr).toBe(0);
    const free = member === 'devpool-1' ? 'devpool-2' : 'devpool-1';
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`devpool  (vm, ns/${namespace}, 2 members)  0 warm, no spares set  waiters 0`);
    expect(lines[1]).toMatch(/^MEMBER\s+HOLDER\s+PHASE\s+SESSION\s+WARM$/);
    expect(lines.find((line) => line.startsWith(member))).toMatch(
      new RegExp(`^${member}\\s+alice@example.com\\s+(Starting|Running)\\s+claimed\\s+-$`),
    );
    expect(lines.find((line) => line.startsWith(free))).toMatch(
      new RegExp(`^${free}\\s+free\\s+Stopped\\s+-\\s+-$`),
    );

    const json = jsonOf<{ status: Record<string, unknown> & { members: Array<Record<string, unknown>> } }>(
      await cli(['pool', 'status', 'devpool', '-n', namespace, '-o', 'json']),
    );
    expect(json.status).toMatchObject({
      id: `vm/${namespace}/devpool`,
      kind: 'vm',
      minReady: null,
      warm: 0,
      short: 0,
      waiters: 0,
    });
    expect(json.status.members.find((entry) => entry.name === member)).toMatchObject({
      holder: 'alice@example.com',
      session: 'claimed',
      warm: false,
      spare: false,
    });
    expect(json.status.members.find((entry) => entry.name === free)).toMatchObject({
      holder: null,
      phase: 'Stopped',
      power: 'stopped',
      session: 'none',
    });
  });

  it('pages the members of pool status and pool list with --limit and --after, counting the whole pool', async () => {
    const namespace = await poolOf('cli-page', 5);
    const status = await cli(['pool', 'status', 'devpool', '-n', namespace, '--limit', '2']);
    expect(status.code, status.stderr).toBe(0);
    const lines = status.stdout.trimEnd().split('\n');
    expect(lines[0]).toContain(`ns/${namespace}, 5 members)`);
    expect(lines.slice(2).map((line) => line.split(/\s+/)[0])).toEqual(['devpool-1', 'devpool-2', 'members']);
    expect(lines.at(-1)).toBe('members 1-2 of 5; next: --after devpool-2');

    type Paged = {
      members: Array<{ name: string }>;
      page: { total: number; skipped: number; next?: string };
    };
    const next = jsonOf<{ status: Paged } & Pick<Paged, 'page'>>(
      await cli([
        'pool',
        'status',
        'devpool',
        '-n',
        namespace,
        '--limit',
        '2',
        '--after',
        'devpool-2',
        '-o',
        'json',
      ]),
    );
    expect([next.status.members.map((member) => member.name), next.page]).toEqual([
      ['devpool-3', 'devpool-4'],
      { total: 5, skipped: 2, next: 'devpool-4' },
    ]);

    const listed = jsonOf<{ pools: Array<Paged & { counts: { members: number } }> }>(
      await cli(['pool', 'list', '-n', namespace, '--limit', '2', '--after', 'devpool-4', '-o', 'json']),
    );
    expect(
      listed.pools.map((pool) => [pool.counts.members, pool.members.map((member) => member.name), pool.page]),
    ).toEqual([[5, ['devpool-5'], { total: 5, skipped: 4 }]]);
    const text = await cli(['pool', 'list', '-n', namespace, '--limit', '3']);
    expect(text.stdout.trimEnd().split('\n').at(-1)?.trim()).toBe(
      'members 1-3 of 5; next: --after devpool-3',
    );

    const refused = await cli(['pool', 'list', '-n', namespace, '--limit', '0', '-o', 'json']);
    expect([refused.code, jsonOf<{ error: { message: string } }>(refused).error.message]).toEqual([
      2,
      '--limit takes a whole number from 1 to 10000, not "0"',
    ]);
  });

  it('follows a pool with -w, printing it again when a member is assigned', async ({ onTestFinished }) => {
    const namespace = await poolOf('cli-status-watch', 1);
    const child = startCli([
      'pool',
      'status',
      'devpool',
      '-w',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    onTestFinished(() => {
      child.kill();
    });
    const log = collectOutput(child);
    await log.waitFor(/devpool-1\s+free\s+Stopped/);
    await assignedMember(namespace, 'alice@example.com');
    const output = await log.waitFor(/devpool-1\s+alice@example.com/);
    // the first reading stays as printed, the change comes after it
    expect(output.indexOf('free')).toBeLessThan(output.indexOf('alice@example.com'));
    expect(child.exitCode).toBeNull();
  });

  it('shows a container pool with --kind ct and its minReady from the spec', async () => {
    const namespace = await createNamespace(cluster(), 'cli-status-ct');
    const applied = await cli([
      'ct-pool',
      'apply',
      'devbox',
      '--image',
      'ghcr.io/acme/devbox:1.4',
      '--size',
      '1',
      '-n',
      namespace,
    ]);
    expect(applied.code, applied.stderr).toBe(0);
    const refused = await cli(['pool', 'status', 'devbox', '-n', namespace]);
    expect(refused.code).toBe(1);
    const status = jsonOf<{ status: { kind: string; members: unknown[]; minReady: number | null } }>(
      await cli(['pool', 'status', 'devbox', '--kind', 'ct', '-n', namespace, '-o', 'json']),
    );
    expect(status.status).toMatchObject({ kind: 'ct', minReady: null, members: [] });
  });
});
