import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { configMapKind, podKind } from '../../../src/kube/resource-kinds.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { cliEnv, cliFor, cliPath, createNamespace, jsonOf, useCliCluster } from './cli-support.js';

const cluster = useCliCluster();
const { cli } = cliFor(cluster);

// a person at a terminal: the CLI runs on a pseudo-terminal (util-linux `script`) and reads what is typed
function typeInto(args: string[], lines: string[]): Promise<{ code: number; output: string }> {
  const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  const command = [process.execPath, cliPath, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qec', command, '/dev/null'], { env: cliEnv() });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  let sent = 0;
  const feed = setInterval(() => {
    // each line once the shell has printed a prompt-worthy amount after the previous one
    if (sent < lines.length && output.length > 0) child.stdin.write(`${lines[sent++]}\r`);
  }, 300);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearInterval(feed);
      resolve({ code: code ?? 1, output });
    }),
  );
}

// a script: the CLI's input is a pipe that ends after the commands, as in `corral-vdi connect … <<EOF`
function pipeInto(args: string[], input: string): Promise<{ code: number; output: string }> {
  const child = spawn(process.execPath, [cliPath, ...args], { env: cliEnv() });
  let output = '';
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, output })));
}

describe('corral-vdi ct-pool and connect --kind ct', () => {
  it('applies a spec file, reconciles, lists, claims, attaches a shell, and deletes the pool', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct');
    const kube = new KubeCluster(cluster().kubeConfig);
    const file = join(tmpdir(), `devbox-${namespace}.yaml`);
    // not the default shell: connect must name the pool's own
    writeFileSync(file, 'name: devbox\nimage: ghcr.io/acme/devbox:1.4\nsize: 1\nshell: /bin/bash\n');

    const bad = await cli([
      'ct-pool',
      'apply',
      'devbox',
      '--image',
      'Not An Image',
      '--size',
      '1',
      '-n',
      namespace,
    ]);
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringMatching(/image: is not an image reference/)]);

    const applied = await cli(['ct-pool', 'apply', '-f', file, '-n', namespace, '-o', 'json']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(jsonOf<{ applied: { id: string; created: boolean } }>(applied).applied).toMatchObject({
      id: `ct/${namespace}/devbox`,
      created: true,
    });
    const reconciled = await cli(['ct-pool', 'reconcile', 'devbox', '-n', namespace]);
    expect([reconciled.code, reconciled.stdout]).toEqual([0, 'container pool "devbox":\n  + devbox-1\n']);
    const listed = await cli(['ct-pool', 'list', '-n', namespace, '-o', 'json']);
    expect(jsonOf<{ pools: Array<{ name: string }> }>(listed).pools.map((pool) => pool.name)).toEqual([
      'devbox',
    ]);

    await waitFor(() => kube.resource(podKind).in(namespace).get('devbox-1'), {
      describe: 'devbox-1 to be Ready',
      until: (pod) =>
        pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    });
    const assigned = await cli(['assign', 'devbox', 'alice', '-n', namespace, '--kind', 'ct']);
    expect(assigned.code, assigned.stderr).toBe(0);
    const planned = await cli(['connect', 'devbox-1', '--kind', 'ct', '--user', 'alice', '-n', namespace]);
    expect([planned.code, planned.stdout]).toEqual([
      0,
      expect.stringMatching(/^connect: terminal: .*\nskipped: rdp: a CT member offers only its terminal/m),
    ]);
    expect(planned.stdout).toContain(`kubectl exec -it -n ${namespace} devbox-1 -- /bin/bash`);
    const plannedJson = jsonOf<{ target: { shell: string } }>(
      await cli(['connect', 'devbox-1', '--kind', 'ct', '--user', 'alice', '-n', namespace, '-o', 'json']),
    );
    expect(plannedJson.target.shell).toBe('/bin/bash');

    const attached = await typeInto(
      [
        'connect',
        'devbox-1',
        '--kind',
        'ct',
        '--open',
        '-n',
        namespace,
        '--kubeconfig',
        cluster().kubeconfigPath,
      ],
      ['echo "on $HOSTNAME"', 'exit 4'],
    );
    expect(attached.output).toContain('on devbox-1');
    expect(attached.code).toBe(4);

    const piped = await pipeInto(
      [
        'connect',
        'devbox-1',
        '--kind',
        'ct',
        '--open',
        '-n',
        namespace,
        '--kubeconfig',
        cluster().kubeconfigPath,
      ],
      'echo "piped into $HOSTNAME"\nexit 6\n',
    );
    expect(piped.output).toContain('piped into devbox-1');
    expect(piped.code).toBe(6);
    const withoutExit = await pipeInto(
      [
        'connect',
        'devbox-1',
        '--kind',
        'ct',
        '--open',
        '-n',
        namespace,
        '--kubeconfig',
        cluster().kubeconfigPath,
      ],
      'echo "no exit in $HOSTNAME"\n',
    );
    expect(withoutExit.output).toContain('no exit in devbox-1');
    expect(withoutExit.code).toBe(0);

    const deleted = await cli(['ct-pool', 'delete', 'devbox', '-n', namespace, '--force']);
    expect([deleted.code, deleted.stdout]).toEqual([
      0,
      'container pool "devbox" deleted: 1 member, claimed ones included\n',
    ]);
  });

  it('refuses at apply, exit 1, what the apiserver or the kubelet would refuse of a member, naming the field', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-refused');
    const kube = new KubeCluster(cluster().kubeConfig);
    const file = join(tmpdir(), `devbox-${namespace}.yaml`);
    const base = 'name: devbox\nimage: ghcr.io/acme/devbox:1.4\nsize: 1\n';
    const refused = [
      ['imagePullPolcy: Always\n', [], /imagePullPolcy: unknown field/],
      ['resources:\n  limits: { cpus: "2" }\n', [], /resources\.limits\.cpus: is not a resource name/],
      ['', ['--image', 'Acme/devbox:1.4'], /image: starts with "Acme", .*registry host/],
      [
        'resources:\n  requests: { memory: 4Gi }\n  limits: { memory: 1Gi }\n',
        [],
        /resources\.requests: the apiserver refuses the member's Pod: .*must be less than or equal to memory limit of 1Gi/,
      ],
      [
        '',
        ['--home-size', '0'],
        /home\.size: the apiserver refuses the member's PersistentVolumeClaim: .*must be greater than zero/,
      ],
    ] as const;
    for (const [extra, flags, message] of refused) {
      writeFileSync(file, base + extra);
      const result = await cli(['ct-pool', 'apply', '-f', file, ...flags, '-n', namespace]);
      expect([result.code, result.stderr], extra + flags.join(' ')).toEqual([
        1,
        expect.stringMatching(message),
      ]);
      expect(result.stderr).toMatch(/Nothing was written/);
    }
    expect(await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox')).toBeUndefined();
  });

  it('sets minReady and the reclaim settings by flags over a spec file, refuses bad ones, and shows the action', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-action');
    const kube = new KubeCluster(cluster().kubeConfig);
    const file = join(tmpdir(), `devbox-${namespace}.yaml`);
    writeFileSync(file, 'name: devbox\nimage: ghcr.io/acme/devbox:1.4\nsize: 2\nreclaimAction: notify\n');
    const apply = (...flags: string[]) => cli(['ct-pool', 'apply', '-f', file, '-n', namespace, ...flags]);

    const refused = [
      [['--reclaim-action', 'stop'], /reclaimAction: a container cannot be stopped and kept/],
      [['--reclaim-webhook', 'http://127.0.0.1:9/hook'], /only when allowed \(--allow-http-webhook\)/],
      [
        ['--reclaim-action', 'recreate', '--reclaim-webhook', 'https://hooks.example.com/vdi'],
        /reclaimWebhook: .*notify/,
      ],
      [['--min-ready', '3'], /minReady: must be at most the size, 2/],
      [['--min-ready', 'two'], /minReady: /],
    ] as const;
    for (const [flags, message] of refused) {
      const result = await apply(...flags);
      expect([result.code, result.stderr], flags.join(' ')).toEqual([1, expect.stringMatching(message)]);
    }
    const badDuration = await apply('--idle-timeout', '15min');
    expect([badDuration.code, badDuration.stderr]).toEqual([2, expect.stringMatching(/--idle-timeout: /)]);
    expect(await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox')).toBeUndefined();

    const applied = await apply(
      '--min-ready',
      '1',
      '--reclaim-webhook',
      'http://127.0.0.1:9/hook',
      '--allow-http-webhook',
      '--idle-timeout',
      '45m',
      '-o',
      'json',
    );
    expect(applied.code, applied.stderr).toBe(0);
    const spec = {
      minReady: 1,
      reclaimAction: 'notify',
      reclaimWebhook: 'http://127.0.0.1:9/hook',
      idleTimeoutMs: 45 * 60_000,
    };
    expect(jsonOf<{ applied: unknown }>(applied).applied).toMatchObject({ reclaimAction: 'notify', spec });
    const got = await cli(['ct-pool', 'get', 'devbox', '-n', namespace]);
    expect([got.code, got.stdout]).toEqual([
      0,
      expect.stringContaining(
        `devbox  (ns/${namespace}, 2 members of ghcr.io/acme/devbox:1.4; reclaim: notify → http://127.0.0.1:9, idle timeout: 45m)`,
      ),
    ]);

    // without the file's notify, the action in force is the default
    writeFileSync(file, 'name: devbox\nimage: ghcr.io/acme/devbox:1.4\nsize: 2\n');
    expect((await apply()).code).toBe(0);
    const listed = await cli(['ct-pool', 'list', '-n', namespace, '-o', 'json']);
    const [pool] = jsonOf<{ pools: Array<{ reclaimAction: string; spec: Record<string, unknown> }> }>(
      listed,
    ).pools;
    expect(pool?.reclaimAction).toBe('recreate');
    expect(pool?.spec).not.toHaveProperty('reclaimAction');
  });

  it('takes a schedule in the spec file or as flags, shows it, refuses a bad one writing nothing, and sends pool set and a roll-out to ct-pool apply', async () => {
    const namespace = await createNamespace(cluster(), 'cli-ct-plans');
    const kube = new KubeCluster(cluster().kubeConfig);
    const file = join(tmpdir(), `devbox-plans-${namespace}.yaml`);
    writeFileSync(
      file,
      [
        'name: devbox',
        'image: ghcr.io/acme/devbox:1.4',
        'size: 1',
        'schedule:',
        '  timeZone: Europe/Berlin',
        '  periods:',
        '    - { name: peak, days: mon-fri, start: "08:00", end: "18:00", buffer: 20%, min: 2, max: 30 }',
        '',
      ].join('\n'),
    );
    const scheduled = await cli(['ct-pool', 'apply', '-f', file, '-n', namespace, '-o', 'json']);
    expect(scheduled.code, scheduled.stderr).toBe(0);
    expect(
      jsonOf<{ applied: { spec: { schedule: unknown } } }>(scheduled).applied.spec.schedule,
    ).toMatchObject({
      timeZone: 'Europe/Berlin',
      periods: [{ name: 'peak', buffer: { percent: 20 }, min: 2, max: 30 }],
    });
    const shown = await cli(['ct-pool', 'get', 'devbox', '-n', namespace]);
    expect(shown.stdout).toContain(
      'schedule (Europe/Berlin, outside it 1): peak mon,tue,wed,thu,fri 08:00-18:00 buffer 20% min 2 max 30',
    );
    const status = await cli(['pool', 'status', 'devbox', '--kind', 'ct', '-n', namespace, '-o', 'json']);
    expect(status.code, status.stderr).toBe(0);
    expect(jsonOf<{ status: { schedule: unknown } }>(status).status.schedule).toMatchObject({
      timeZone: 'Europe/Berlin',
      plainSize: 1,
    });

    // the flags replace the file's schedule; a cap below the floor is named and nothing is written
    const stored = await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox');
    const refused = await cli([
      'ct-pool',
      'apply',
      '-f',
      file,
      '--time-zone',
      'Europe/Berlin',
      '--period',
      'peak mon-fri 08:00-18:00 buffer 1 min 3 max 2',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(refused.code).toBe(1);
    expect(jsonOf<{ error: { code: string; details: { fields: string[] } } }>(refused).error).toMatchObject({
      code: 'INVALID_INPUT',
      details: { fields: ['schedule.periods[0].max'] },
    });
    expect(
      (await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox'))?.metadata
        .resourceVersion,
    ).toBe(stored?.metadata.resourceVersion);
    const flags = await cli([
      'ct-pool',
      'apply',
      '-f',
      file,
      '--time-zone',
      'America/New_York',
      '--period',
      'night sat-sun 00:00-24:00 buffer 0 min 0 max 1 to-zero',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(flags.code, flags.stderr).toBe(0);
    expect(jsonOf<{ applied: { spec: { schedule: unknown } } }>(flags).applied.spec.schedule).toMatchObject({
      timeZone: 'America/New_York',
      periods: [{ name: 'night', days: ['sat', 'sun'], scaleToZero: true }],
    });

    const period = await cli([
      'pool',
      'set',
      'devbox',
      '--time-zone',
      'Europe/Berlin',
      '--period',
      'peak mon-fri 08:00-18:00 buffer 1 min 1 max 4',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(period.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(period).error).toMatchObject({
      code: 'UNSUPPORTED_BACKEND',
      message: expect.stringContaining(
        'schedule is part of its spec: apply it with "corral-vdi ct-pool apply',
      ),
    });
    const rollout = await cli([
      'pool',
      'set',
      'devbox',
      '--from',
      'golden-v2',
      '-n',
      namespace,
      '-o',
      'json',
    ]);
    expect(rollout.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(rollout).error).toMatchObject({
      code: 'UNSUPPORTED_BACKEND',
      message: expect.stringContaining("a container pool's image change is its roll-out"),
    });
    // the pool's own settings ConfigMap of a VM pool was never made
    expect(await kube.resource(configMapKind).in(namespace).get('corral-vdi-pool-devbox')).toBeUndefined();
  });
});
