import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { cliFor, createNamespace, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli, poolOf, assignedMember } = cliFor(cluster);
const alice = 'alice@example.com';
const image = 'ghcr.io/acme/devbox:1.4';

interface StatusMember {
  name: string;
  holder: string | null;
  entitlement: string | null;
  notEntitledAt: string | null;
}

async function statusOf(namespace: string, pool: string, kind = 'vm'): Promise<StatusMember[]> {
  const run = await cli(['pool', 'status', pool, '--kind', kind, '-n', namespace, '-o', 'json']);
  expect(run.code, run.stderr).toBe(0);
  return jsonOf<{ status: { members: StatusMember[] } }>(run).status.members;
}

const heldBy = (members: StatusMember[], holder: string) => members.find((entry) => entry.holder === holder);

describe('corral-vdi pool status marks holders a pool no longer lets in', () => {
  it('marks a VM pool claim once its group is taken away, shows the pass’s mark, and clears the list with --allow-group ""', async () => {
    const namespace = await poolOf('cli-entitled', 2);
    expect((await cli(['pool', 'set', 'devpool', '--allow-group', 'ml', '-n', namespace])).code).toBe(0);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    // a front end that serves users names their groups; an admin's assign is never judged
    await vdi.claim({ pool: 'devpool', identity: alice, groups: ['ml'] });
    await assignedMember(namespace, 'dave');
    expect(heldBy(await statusOf(namespace, 'devpool'), alice)?.entitlement).toBe('entitled');

    expect((await cli(['pool', 'set', 'devpool', '--allow-group', 'research', '-n', namespace])).code).toBe(
      0,
    );
    const revoked = await statusOf(namespace, 'devpool');
    expect(heldBy(revoked, alice)).toMatchObject({ entitlement: 'not-entitled', notEntitledAt: null });
    expect(heldBy(revoked, 'dave')).toMatchObject({ entitlement: 'unchecked' });
    const text = await cli(['pool', 'status', 'devpool', '-n', namespace]);
    expect(text.stdout).toMatch(/devpool-\d\s+alice@example.com \(not entitled\)\s+/);
    expect(text.stdout).not.toContain('dave (not entitled)');

    const engine = createSessionEngine(vdi.context, { namespaces: [namespace] });
    expect(await engine.runPass()).toMatchObject({ notEntitled: 1, errors: [] });
    expect(heldBy(await statusOf(namespace, 'devpool'), alice)?.notEntitledAt).toEqual(expect.any(String));

    const cleared = await cli(['pool', 'set', 'devpool', '--allow-group', '', '-n', namespace, '-o', 'json']);
    expect(cleared.code, cleared.stderr).toBe(0);
    const listed = await cli(['pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pools: Array<{ settings: unknown }> }>(listed).pools[0]?.settings).toEqual({});
    expect(heldBy(await statusOf(namespace, 'devpool'), alice)?.entitlement).toBe('entitled');

    const usage = await cli([
      'pool',
      'set',
      'devpool',
      '--allow-group',
      '',
      '--allow-group',
      'ml',
      '-n',
      namespace,
    ]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--allow-group '' clears the list");
  });

  it('marks a container pool claim, and ct-pool apply --allow-user "" clears the list a spec file names', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-entitled');
    const apply = (...flags: string[]) =>
      cli(['ct-pool', 'apply', 'devbox', '--image', image, '--size', '1', '-n', namespace, ...flags]);
    expect((await apply('--allow-user', alice)).code).toBe(0);
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    await vdi.reconcileCtPool({ name: 'devbox' });
    await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get('devbox-1'), {
      describe: `Pod ${namespace}/devbox-1 to be Ready`,
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    await vdi.claim({ pool: 'devbox', identity: alice, groups: [], kind: 'ct' });
    expect(heldBy(await statusOf(namespace, 'devbox', 'ct'), alice)?.entitlement).toBe('entitled');

    const file = join(tmpdir(), `${namespace}-devbox.yaml`);
    writeFileSync(file, `name: devbox\nimage: ${image}\nsize: 1\nallowedUsers: [bob@example.com]\n`);
    expect((await cli(['ct-pool', 'apply', '-f', file, '-n', namespace])).code).toBe(0);
    const text = await cli(['pool', 'status', 'devbox', '--kind', 'ct', '-n', namespace]);
    expect(text.stdout).toMatch(/devbox-1\s+alice@example.com \(not entitled\)\s+/);

    const cleared = await cli([
      'ct-pool',
      'apply',
      '-f',
      file,
      '--allow-user',
      '',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(cleared.code, cleared.stderr).toBe(0);
    const got = await cli(['ct-pool', 'get', 'devbox', '-n', namespace, '-o', 'json']);
    expect(JSON.stringify(jsonOf(got))).not.toContain('bob@example.com');
    expect(heldBy(await statusOf(namespace, 'devbox', 'ct'), alice)?.entitlement).toBe('entitled');
  });
});
