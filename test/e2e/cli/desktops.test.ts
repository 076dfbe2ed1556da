import { createServer, type Server } from 'node:net';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  cliEnv,
  cliFor,
  createGoldenVm,
  createNamespace,
  jsonOf,
  useCliCluster,
  waitForVmiAddress,
} from './cli-support.js';

// The shared simulator hands every VM of the run its own address, so the RDP listener below meets no other VM.
const cluster = useCliCluster();
const { cli, poolOf, assignedMember } = cliFor(cluster);

async function listen3389(host: string): Promise<Server> {
  const server = createServer((socket) => socket.end());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(3389, host, resolve);
  });
  return server;
}

// Every test works in a namespace of its own, so the file's tests run side by side.
describe.concurrent('corral-vdi assign, connect and unassign', () => {
  it('assigns a member, prints the connect hint, and lists the user as its holder', async () => {
    const namespace = await poolOf('assign', 3);
    const assigned = await cli(['assign', 'devpool', 'alice', '-n', namespace]);
    expect(assigned.code, assigned.stderr).toBe(0);
    const match =
      /^assigned (devpool-[123]) → alice\nconnect: {2}corral-vdi connect (devpool-[123]) -n (\S+)\n$/.exec(
        assigned.stdout,
      );
    expect(match?.[1]).toBe(match?.[2]);
    expect(match?.[3]).toBe(namespace);
    const member = match?.[1] ?? '';

    // assign asked KubeVirt to start it; once the simulator has seen that, the list shows it started
    const kube = new KubeCluster(cluster().kubeConfig);
    expect((await kube.getVm(namespace, member))?.spec.runStrategy).toBe('Always');
    await waitFor(() => kube.getVm(namespace, member), {
      describe: `the simulator to show ${member} started`,
      until: (vm) => ['Starting', 'Running'].includes(vm?.status?.printableStatus ?? ''),
    });
    const listed = await cli(['pool', 'list'], cliEnv({ CORRAL_NAMESPACE: namespace }));
    const line = listed.stdout.split('\n').find((row) => row.startsWith(`  ${member} `));
    expect(line).toMatch(new RegExp(`^ {2}${member} +alice +(starting|running)$`));

    // Without -n the hint names no namespace: the environment already chose it.
    const again = await cli(['assign', 'devpool', 'alice'], cliEnv({ CORRAL_NAMESPACE: namespace }));
    expect(again).toEqual({
      code: 0,
      stdout: `already assigned ${member} → alice\nconnect:  corral-vdi connect ${member}\n`,
      stderr: '',
    });
  });

  it('answers assign and unassign with -o json', async () => {
    const namespace = await poolOf('assign-json', 1);
    const run = await cli(['assign', 'devpool', 'alice@example.com', '-n', namespace, '-o', 'json']);
    const body = jsonOf<Record<string, unknown> & { desktop: Record<string, unknown> }>(run);
    expect(body).toMatchObject({
      retried: false,
      adopted: false,
      startError: null,
      connect: `corral-vdi connect devpool-1 -n ${namespace}`,
      desktop: {
        id: `vm/${namespace}/devpool-1`,
        namespace,
        member: 'devpool-1',
        pool: 'devpool',
        poolId: `vm/${namespace}/devpool`,
        owner: 'alice@example.com',
        legacy: false,
        ephemeral: false,
      },
    });
    expect(Object.keys(body.desktop).sort()).toEqual([
      'claimedAt',
      'ephemeral',
      'expiresAt',
      'id',
      'legacy',
      'member',
      'namespace',
      'owner',
      'phase',
      'pool',
      'poolId',
      'running',
      'sessionId',
    ]);
    expect(body.desktop.sessionId).toEqual(expect.any(String));

    const released = await cli(['unassign', 'devpool-1', '-n', namespace, '-o', 'json']);
    expect(jsonOf(released)).toEqual({
      desktop: `vm/${namespace}/devpool-1`,
      member: 'devpool-1',
      namespace,
      holder: 'alice@example.com',
      reset: 'stopped',
    });
  });

  it('connects with RDP while TCP 3389 answers on the guest, then with VNC and the skipped reason', async () => {
    const namespace = await poolOf('connect', 1);
    const member = await assignedMember(namespace, 'alice');
    const ip = await waitForVmiAddress(cluster(), namespace, member);
    const server = await listen3389(ip);
    try {
      const withRdp = await cli(['connect', member, '-n', namespace]);
      expect(withRdp).toEqual({
        code: 0,
        stdout: [
          `desktop vm/${namespace}/${member} (held by alice)`,
          `connect: RDP: xfreerdp /v:${ip}`,
          `fallback: VNC: virtctl vnc ${member} -n ${namespace}`,
          `fallback: serial console: virtctl console ${member} -n ${namespace}`,
          'skipped: terminal: only a CT member offers a container terminal',
          '',
        ].join('\n'),
        stderr: '',
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }

    const withoutRdp = await cli(['connect', member, '-n', namespace, '--user', 'alice']);
    expect(withoutRdp).toEqual({
      code: 0,
      stdout: [
        `desktop vm/${namespace}/${member} (held by alice)`,
        `connect: VNC: virtctl vnc ${member} -n ${namespace}`,
        `fallback: serial console: virtctl console ${member} -n ${namespace}`,
        `skipped: rdp: TCP 3389 did not answer at ${ip}:3389 from this machine (connection refused)`,
        'skipped: terminal: only a CT member offers a container terminal',
        '',
      ].join('\n'),
      stderr: '',
    });

    const json = jsonOf(await cli(['connect', member, '-n', namespace, '-o', 'json']));
    expect(json).toEqual({
      desktopId: `vm/${namespace}/${member}`,
      namespace,
      member,
      holder: 'alice',
      target: { protocol: 'vnc', namespace, vm: member },
      fallbacks: [{ protocol: 'serial', namespace, vm: member }],
      skipped: [
        {
          protocol: 'rdp',
          reason: `TCP 3389 did not answer at ${ip}:3389 from this machine (connection refused)`,
        },
        { protocol: 'terminal', reason: 'only a CT member offers a container terminal' },
      ],
      launches: [
        { protocol: 'vnc', argv: ['virtctl', 'vnc', member, '-n', namespace] },
        { protocol: 'serial', argv: ['virtctl', 'console', member, '-n', namespace] },
      ],
    });
  });

  it('refuses to connect for a user who does not hold the desktop, to a free member, and to a CT member', async () => {
    const namespace = await poolOf('connect-refused', 2);
    const member = await assignedMember(namespace, 'alice');
    await waitForVmiAddress(cluster(), namespace, member);
    const other = await cli(['connect', member, '-n', namespace, '--user', 'bob']);
    expect(other).toMatchObject({ code: 1, stdout: '' });
    expect(other.stderr).toBe(
      `error: vm/${namespace}/${member} is held by another user; only its holder or an admin can connect to it.\n`,
    );

    const free = member === 'devpool-1' ? 'devpool-2' : 'devpool-1';
    const unclaimed = await cli(['connect', free, '-n', namespace, '-o', 'json']);
    expect(unclaimed.code).toBe(1);
    expect(jsonOf<{ error: { code: string } }>(unclaimed).error.code).toBe('CLAIM_ENDED');

    // a claimed VM member's name asked for as a container desktop is no container desktop
    const ct = await cli(['connect', member, '-n', namespace, '--kind', 'ct', '-o', 'json']);
    expect(ct.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(ct).error).toMatchObject({
      code: 'MEMBER_NOT_FOUND',
      message: expect.stringContaining(`is a member of a VM pool; use vm/${namespace}/${member} instead`),
    });
  });

  it('unassigns a member, stopping it, and refuses to unassign a free one', async () => {
    const namespace = await poolOf('unassign', 1);
    await assignedMember(namespace, 'alice');
    const released = await cli(['unassign', 'devpool-1', '-n', namespace]);
    expect(released).toEqual({
      code: 0,
      stdout: 'unassigned devpool-1 from alice: stopped, its disks kept\n',
      stderr: '',
    });
    const again = await cli(['unassign', 'devpool-1', '-n', namespace]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `error: Desktop vm/${namespace}/devpool-1 is not claimed; there is nothing to release.\n`,
    );
    const missing = await cli(['unassign', 'devpool-9', '-n', namespace]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: There is no VM "devpool-9" in namespace/);
  });
});

describe.concurrent('corral-vdi usb redir', () => {
  it('checks the holder, the device ID, client passthrough and virtctl before it attaches anything', async () => {
    const namespace = await createNamespace(cluster(), 'usb');
    await createGoldenVm(cluster(), namespace, 'golden-desktop', { clientPassthrough: {} });
    await createGoldenVm(cluster(), namespace, 'golden-plain');
    expect(
      (await cli(['pool', 'create', 'devpool', '--from', 'golden-desktop', '--size', '1', '-n', namespace]))
        .code,
    ).toBe(0);
    expect(
      (await cli(['pool', 'create', 'plain', '--from', 'golden-plain', '--size', '1', '-n', namespace])).code,
    ).toBe(0);
    expect((await cli(['assign', 'devpool', 'alice', '-n', namespace])).code).toBe(0);
    expect((await cli(['assign', 'plain', 'alice', '-n', namespace])).code).toBe(0);
    await waitForVmiAddress(cluster(), namespace, 'devpool-1');
    await waitForVmiAddress(cluster(), namespace, 'plain-1');
    // a PATH with node alone, so virtctl is missing here whatever this machine has installed
    const env = cliEnv({ PATH: dirname(process.execPath) });
    const redir = (member: string, device: string, user: string) =>
      cli(['usb', 'redir', member, '--device', device, '--user', user, '-n', namespace], env);

    const notHolder = await redir('devpool-1', '1050:0407', 'bob');
    expect(notHolder.code).toBe(1);
    expect(notHolder.stderr).toBe(
      `error: vm/${namespace}/devpool-1 is held by another user; only its holder or an admin can redirect USB devices to it.\n`,
    );
    const badDevice = await redir('devpool-1', 'yubikey', 'alice');
    expect(badDevice.code).toBe(1);
    expect(badDevice.stderr).toMatch(
      /^error: "yubikey" is not a USB device ID: it is neither vendor:product nor bus-device\./,
    );
    const noPassthrough = await redir('plain-1', '1050:0407', 'alice');
    expect(noPassthrough.code).toBe(1);
    expect(noPassthrough.stderr).toMatch(
      /^error: vm\/\S+\/plain-1 does not accept USB redirection: add `clientPassthrough: \{\}`/,
    );
    const noVirtctl = await redir('devpool-1', '1050:0407', 'alice');
    expect(noVirtctl.code).toBe(1);
    expect(noVirtctl.stderr).toMatch(
      /^error: virtctl is not on your PATH; it is needed to redirect USB devices\. Install virtctl/,
    );
  });
});

describe.concurrent('corral-vdi troubleshooting cases', () => {
  it('reports a golden VM that is not in the namespace, and finds it with -n', async () => {
    const home = await createNamespace(cluster(), 'golden-home');
    const elsewhere = await createNamespace(cluster(), 'golden-elsewhere');
    await createGoldenVm(cluster(), home, 'golden-desktop');
    const missing = await cli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '-n',
      elsewhere,
    ]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe(
      `error: golden VM "golden-desktop" not found in namespace "${elsewhere}". Other namespaces are not searched: ` +
        'pass the namespace where the golden VM lives. Pass -n NAMESPACE where the golden VM lives.\n',
    );
    const json = jsonOf<{ error: unknown }>(
      await cli([
        'pool',
        'create',
        'devpool',
        '--from',
        'golden-desktop',
        '--size',
        '2',
        '-n',
        elsewhere,
        '-o',
        'json',
      ]),
    );
    expect(json.error).toMatchObject({
      code: 'GOLDEN_NOT_FOUND',
      details: { golden: 'golden-desktop', namespace: elsewhere },
    });
    const found = await cli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '-n',
      home,
    ]);
    expect(found.code, found.stderr).toBe(0);
  });

  it('reports a pool with no free members and says how to free one', async () => {
    const namespace = await poolOf('full', 1);
    await assignedMember(namespace, 'alice');
    const full = await cli(['assign', 'devpool', 'bob', '-n', namespace]);
    expect(full).toMatchObject({ code: 1, stdout: '' });
    expect(full.stderr).toBe(
      `error: pool has no free members: every member of pool "devpool" in namespace "${namespace}" has a user. ` +
        'Release (unassign) one, or grow the pool. Free one with "corral-vdi unassign MEMBER", or grow it with ' +
        '"corral-vdi pool resize devpool --size N".\n',
    );
  });

  it('keeps an assigned member that will not start, says so, and starts it on the next assign', async () => {
    const namespace = await poolOf('no-start', 1);
    const kube = new KubeCluster(cluster().kubeConfig);
    const failure = 'the VM asks for the feature gate GPU, which is off';
    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.failStart]: `422 ${failure}` } },
    });

    const assigned = await cli(['assign', 'devpool', 'alice', '-n', namespace]);
    expect(assigned.code).toBe(1);
    expect(assigned.stdout).toBe('assigned devpool-1 → alice\n');
    const [line, ...rest] = assigned.stderr.split('\n');
    expect(rest).toEqual(['']);
    expect(line).toMatch(/^error: devpool-1 is assigned to alice but did not start: /);
    expect(line).toContain(failure);
    expect(line).toContain(
      `It stays assigned; fix the cause and run "corral-vdi assign devpool alice -n ${namespace}" again to retry the ` +
        `start, or "corral-vdi unassign devpool-1 -n ${namespace}" to back out.`,
    );
    const json = jsonOf<{ startError: string | null }>(
      await cli(['assign', 'devpool', 'alice', '-n', namespace, '-o', 'json']),
    );
    expect(json.startError).toContain(failure);

    const listed = await cli(['pool', 'list', '-n', namespace]);
    expect(listed.stdout).toContain('  devpool-1                alice                    stopped\n');
    const bob = await cli(['assign', 'devpool', 'bob', '-n', namespace]);
    expect(bob.stderr).toContain('has no free member');

    await kube.patchVm(namespace, 'devpool-1', {
      metadata: { annotations: { [simulatorAnnotations.failStart]: null } },
    });
    const retried = await cli(['assign', 'devpool', 'alice', '-n', namespace]);
    expect(retried).toEqual({
      code: 0,
      stdout: `already assigned devpool-1 → alice\nconnect:  corral-vdi connect devpool-1 -n ${namespace}\n`,
      stderr: '',
    });
  });
});
