import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, jsonOf, runCli, runCliOnTerminal } from './cli-support.js';

const scratch = mkdtempSync(join(tmpdir(), 'corral-vdi-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// A HOME without ~/.kube/config, so nothing finds a cluster by accident.
const noCluster = cliEnv({ HOME: scratch });

const commands = [
  'pool create',
  'pool list',
  'pool delete',
  'pool resize',
  'pool set',
  'pool plan',
  'claim',
  'assign',
  'unassign',
  'connect',
  'usb list',
  'usb redir',
  'dev-cluster up',
  'dev-cluster down',
  'dev-cluster status',
  'broker serve',
];

// No test touches a cluster or another's files, so they run side by side.
describe.concurrent('corral-vdi without a cluster', () => {
  it('prints the version from package.json', async () => {
    const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const run = await runCli(['--version'], noCluster);
    expect(run).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
  });

  it('lists every command in its help, with no args as with --help', async () => {
    const bare = await runCli([], noCluster);
    const help = await runCli(['--help'], noCluster);
    expect(bare.code).toBe(0);
    expect(help.stdout).toBe(bare.stdout);
    for (const command of commands) expect(help.stdout).toContain(command);
    expect(help.stdout).not.toContain('dev-cluster serve');
  });

  it.each(commands)('shows the usage, flags and an example of "%s" with --help', async (command) => {
    const run = await runCli([...command.split(' '), '--help'], noCluster);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Usage: corral-vdi ${command}`));
    expect(run.stdout).toMatch(/Examples?:\n {2}\$ (CORRAL_\S+ )*corral-vdi /);
    expect(run.stdout).toContain('-o, --output text|json');
  });

  it('lists the subcommands of a group with --help, and refuses the group alone with exit code 2', async () => {
    const help = await runCli(['pool', '--help'], noCluster);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('pool create <name>');
    const bare = await runCli(['pool'], noCluster);
    expect(bare).toMatchObject({ code: 2, stdout: '' });
    expect(bare.stderr).toBe(
      'error: "pool" needs a subcommand: create, list, delete, resize, set, status, plan\nRun "corral-vdi pool --help" to see how it is used.\n',
    );
  });

  it.each([
    [['frobnicate'], 'error: unknown command "frobnicate"'],
    [
      ['pool', 'grow'],
      'error: unknown subcommand "pool grow"; "pool" has: create, list, delete, resize, set, status, plan',
    ],
    [['assign', 'devpool'], 'error: "assign" needs <user>'],
    [['unassign', 'a', 'b'], 'error: "unassign" takes only <member>, not "b"'],
    [['pool', 'list', '--colour'], 'error: unknown flag --colour for "pool list"'],
    [['pool', 'create', 'devpool', '--size', '3'], 'error: "pool create" needs --from GOLDEN'],
    [
      ['pool', 'create', 'devpool', '--from', 'golden', '--size', 'three'],
      'error: --size takes a whole number of at least 1, not "three"',
    ],
    [
      ['pool', 'create', 'devpool', '--from', 'golden', '--size', '0'],
      'error: --size takes a whole number of at least 1, not "0"',
    ],
    [
      ['pool', 'create', 'devpool', '--from', 'golden', '--size', '2', '--clone-timeout', '2 minutes'],
      'error: --clone-timeout: Duration "2 minutes"',
    ],
    [['pool', 'list', '-o', 'yaml'], 'error: -o takes text or json, not "yaml"'],
    [['pool', 'list', '-n'], 'error: flag --namespace needs a value'],
    [['connect', 'devpool-1', '--kind', 'pod'], 'error: --kind takes vm or ct, not "pod"'],
    [
      ['connect', 'devpool-1', '--broker', 'http://127.0.0.1:9', '--user', 'alice'],
      'error: --user does not go with --broker',
    ],
    [['usb', 'redir', 'devpool-1', '--device', '1050:0407'], 'error: "usb redir" needs --user LOGIN'],
    [['broker', 'serve'], 'error: "broker serve" needs --trust-header NAME or --oidc-issuer URL'],
    [
      ['broker', 'serve', '--trust-header', 'X-Forwarded-User', '--oidc-issuer', 'https://login.example.com'],
      'error: use either --trust-header or --oidc-issuer, not both',
    ],
    [
      ['broker', 'serve', '--oidc-issuer', 'https://login.example.com'],
      'error: "broker serve" needs --oidc-client-id ID',
    ],
    [
      ['broker', 'serve', '--trust-header', 'X-Forwarded-User', '--leader-lease-duration', '3s'],
      'error: the --leader-* settings need --leader-elect',
    ],
    [
      [
        'broker',
        'serve',
        '--trust-header',
        'X-Forwarded-User',
        '--leader-elect',
        '--leader-retry-period',
        'soon',
      ],
      'error: --leader-retry-period: Duration "soon"',
    ],
  ])('refuses %j as a usage error with exit code 2', async (args, line) => {
    const run = await runCli(args, noCluster);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    const [first, hint] = run.stderr.split('\n');
    expect(first?.startsWith(line)).toBe(true);
    expect(hint).toMatch(/^Run "corral-vdi( [a-z-]+)* --help" to see how it is used\.$/);
  });

  it('refuses a CORRAL_VDI_LEADER_ELECT that is neither true nor false as a usage error', async () => {
    const run = await runCli(['broker', 'serve', '--trust-header', 'X-Forwarded-User'], {
      ...noCluster,
      CORRAL_VDI_LEADER_ELECT: 'maybe',
    });
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(
      'error: CORRAL_VDI_LEADER_ELECT="maybe" is not valid: use true or false',
    );
  });

  it('reports a usage error as JSON on stdout too when -o json was asked for', async () => {
    const run = await runCli(['assign', 'devpool', '-o', 'json'], noCluster);
    expect(run.code).toBe(2);
    expect(jsonOf(run)).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: '"assign" needs <user>',
        retryable: false,
        details: { usage: true },
      },
    });
  });

  it('says how to get a cluster when no kubeconfig is found, with exit code 1', async () => {
    const run = await runCli(['pool', 'list'], noCluster);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'error: No kubeconfig found: pass --kubeconfig PATH or set KUBECONFIG. To try the CLI on this machine, run ' +
        '`corral-vdi dev-cluster up` and export the KUBECONFIG it prints.\n',
    );
  });

  it('names a missing --kubeconfig file, and a missing --context with the ones there are', async () => {
    const missing = await runCli(['pool', 'list', '--kubeconfig', join(scratch, 'nope')], noCluster);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error: The kubeconfig ${join(scratch, 'nope')} does not exist`);

    const path = join(scratch, 'kubeconfig');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: one, context: {cluster: c, user: u}}]',
        'current-context: one',
      ].join('\n'),
    );
    const context = await runCli(['pool', 'list', '--kubeconfig', path, '--context', 'two'], noCluster);
    expect(context.code).toBe(1);
    expect(context.stderr).toBe('error: The kubeconfig has no context "two"; pass one of: one.\n');
  });

  it('reports an unreachable apiserver in one line, and its causes with --verbose', async () => {
    const path = join(scratch, 'unreachable');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: one, context: {cluster: c, user: u}}]',
        'current-context: one',
      ].join('\n'),
    );
    const env = cliEnv({ HOME: scratch, KUBECONFIG: path });
    const plain = await runCli(['pool', 'list'], env);
    expect(plain.code).toBe(1);
    const lines = plain.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^error: .*Check --kubeconfig and --context; for the local control plane, see "corral-vdi dev-cluster status"\.$/,
    );

    const verbose = await runCli(['pool', 'list', '--verbose'], env);
    expect(verbose.stderr).toContain('  code: CLUSTER_UNAVAILABLE\n');
    expect(verbose.stderr).toMatch(/ {2}caused by: /);
  });

  it('lists the USB devices of this machine, or says clearly that it cannot read them', async () => {
    const text = await runCli(['usb', 'list'], noCluster);
    const json = await runCli(['usb', 'list', '-o', 'json'], noCluster);
    if (existsSync('/sys/bus/usb/devices')) {
      expect(text.code).toBe(0);
      expect(jsonOf<{ devices: unknown[] }>(json).devices).toBeInstanceOf(Array);
    } else {
      expect(text.code).toBe(1);
      expect(text.stderr).toMatch(
        /^error: Cannot read the USB devices of this machine: \/sys\/bus\/usb\/devices is not readable \(ENOENT\)\./,
      );
      expect(jsonOf<{ error: { code: string } }>(json).error.code).toBe('USB_UNAVAILABLE');
    }
  });

  it('says when no broker answers at the --broker URL', async () => {
    const run = await runCli(['connect', 'devpool-1', '--broker', 'http://127.0.0.1:9'], noCluster);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^error: Cannot reach the broker at http:\/\/127\.0\.0\.1:9: .*; check --broker or CORRAL_VDI_BROKER_URL\.\n$/,
    );
  });

  it('takes the broker URL from CORRAL_VDI_BROKER_URL', async () => {
    const run = await runCli(
      ['connect', 'devpool-1'],
      cliEnv({ HOME: scratch, CORRAL_VDI_BROKER_URL: 'http://127.0.0.1:9' }),
    );
    expect(run.stderr).toContain('Cannot reach the broker at http://127.0.0.1:9');
  });

  it('colours its output only on a terminal, and never with NO_COLOR', async () => {
    const piped = await runCli(['frobnicate'], noCluster);
    expect(piped.stderr).not.toContain('\u001b[');
    const terminal = await runCliOnTerminal(['frobnicate'], noCluster);
    expect(terminal.code).toBe(2);
    expect(terminal.stdout).toContain(
      '\u001b[31m\u001b[1merror:\u001b[22m\u001b[39m unknown command "frobnicate"',
    );
    const noColour = await runCliOnTerminal(['frobnicate'], cliEnv({ HOME: scratch, NO_COLOR: '1' }));
    expect(noColour.code).toBe(2);
    expect(noColour.stdout).toContain('error: unknown command "frobnicate"');
    expect(noColour.stdout).not.toContain('\u001b[');
  });

  it('reports dev-cluster status when none runs', async () => {
    const env = cliEnv({ HOME: scratch, XDG_CACHE_HOME: join(scratch, 'cache') });
    const text = await runCli(['dev-cluster', 'status'], env);
    expect(text).toEqual({
      code: 0,
      stdout: 'no local control plane is running; start one with: corral-vdi dev-cluster up\n',
      stderr: '',
    });
    expect(jsonOf(await runCli(['dev-cluster', 'status', '-o', 'json'], env))).toEqual({ running: false });
    const down = await runCli(['dev-cluster', 'down', '-o', 'json'], env);
    expect(jsonOf(down)).toEqual({ stopped: false, pid: null });
  });
});
