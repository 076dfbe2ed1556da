import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { AuthorizationV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError, type VdiError } from '../../../src/errors.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { openKubeWebSocket } from '../../../src/kube/websocket.js';
import type { VmDevices } from '../../../src/kubevirt-types.js';
import type { OutputStream } from '../../../src/launch/run-process.js';
import { usbredirSlots } from '../../../src/testing/kubevirt/console-server.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import {
  simulatedGuestVersion,
  usbredirHeaderBytes,
  usbredirPacketLabel,
} from '../../../src/testing/kubevirt/usbredir-guest.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { type RedirectUsbOptions, redirectUsb } from '../../../src/usb/redirect-usb.js';
import { usbSecurityNotice } from '../../../src/usb/security-notice.js';
import { createVdi } from '../../../src/vdi.js';
import { useSharedCluster, waitForRunningVmi } from '../../support/cluster.js';
import { kubevirtVirtctl, usbredirectStandIn } from '../../support/virtctl.js';
import {
  createFakeCommands,
  type FakeCommands,
  fakeBehaviours,
} from '../../unit/connect-planner/fake-commands.js';
import { createClaimLease, createMember, createNamespace } from './connect-support.js';

// The first groups run small shell scripts named virtctl and usbredirect on the PATH (see fake-commands.ts):
// they record their arguments and print, exit or wait for signals as each test asks, so the runner is tested
// against a real child process. The last group runs KubeVirt's own virtctl through the apiserver to the
// simulator's usbredir guest, with a stand-in for usbredirect, which needs a real USB device.
const cluster = useSharedCluster();
const member = 'devpool-1';
const passthrough: VmDevices = { clientPassthrough: {} };

let fakes: FakeCommands;
beforeEach(() => {
  fakes = createFakeCommands();
  fakes.install('virtctl', fakeBehaviours.exits);
  fakes.install('usbredirect', ['exit 0']);
  fakes.usePath('first');
});
afterEach(() => fakes.remove());

async function setUp(prefix: string, devices: VmDevices = passthrough, claim = true) {
  const namespace = await createNamespace(cluster(), prefix);
  const clock = createTestClock(new Date());
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  await createMember(vdi.context.cluster, namespace, member, devices);
  if (claim) {
    await vdi.claim({ pool: 'devpool', identity: 'alice' });
    await waitForRunningVmi(vdi.context.cluster, namespace, member);
  }
  return { namespace, clock, vdi, ctx: vdi.context };
}

function collect() {
  const lines: Array<[OutputStream | 'notice', string]> = [];
  return { lines, onOutput: (line: string, stream: OutputStream | 'notice') => lines.push([stream, line]) };
}

// What a redirect could change: the VM's spec and presentation, and the Lease. The simulator's own status writes
// to the VM are left out, since they go on in the background.
async function stateOf(ctx: VdiContext, namespace: string, name = member) {
  const [vm, lease] = await Promise.all([
    ctx.cluster.getVm(namespace, name),
    ctx.cluster.getLease(namespace, `corral-vdi-${name}`),
  ]);
  // KubeVirt's controller notes on a VM which API version it saw, whenever it gets to it: not the SDK's change
  const annotations = Object.entries(vm?.metadata.annotations ?? {}).filter(
    ([key]) => !key.endsWith('-observed-api-version'),
  );
  return {
    spec: vm?.spec,
    labels: vm?.metadata.labels,
    annotations: Object.fromEntries(annotations),
    lease: lease?.metadata.resourceVersion,
  };
}

/** Runs a redirect that must be refused, and checks that it changed nothing and started nothing. */
async function refusal(
  ctx: VdiContext,
  namespace: string,
  options: Partial<RedirectUsbOptions> = {},
): Promise<VdiError> {
  const name = options.member ?? member;
  const before = await stateOf(ctx, namespace, name);
  const error = await redirectUsb(ctx, { member, device: '1050:0407', identity: 'alice', ...options }).then(
    () => {
      throw new Error('expected the redirect to be refused');
    },
    (caught: unknown) => {
      if (!isVdiError(caught)) throw caught;
      return caught;
    },
  );
  expect(await stateOf(ctx, namespace, name)).toEqual(before);
  expect(existsSync(join(fakes.dir, 'virtctl.argv'))).toBe(false);
  return error;
}

describe('redirectUsb with a stand-in virtctl', () => {
  it('shows the security notice, runs virtctl usbredir, streams its output and passes its exit code through', async () => {
    const { ctx, namespace } = await setUp('redir');
    const { lines, onOutput } = collect();
    const result = await redirectUsb(ctx, { member, device: '1050:0407', identity: 'alice', onOutput });

    expect(fakes.argvOf('virtctl')).toEqual(['usbredir', '1050:0407', member, '-n', namespace]);
    expect(result).toMatchObject({
      outcome: 'ended',
      desktopId: `vm/${namespace}/${member}`,
      device: '1050:0407',
      argv: ['virtctl', 'usbredir', '1050:0407', member, '-n', namespace],
      exitCode: 3,
    });
    const notice = usbSecurityNotice();
    expect(lines.slice(0, 4)).toEqual([
      ['notice', notice.heading],
      ...notice.points.map((point): ['notice', string] => ['notice', `- ${point}`]),
    ]);
    expect(lines.slice(4).filter(([stream]) => stream === 'stdout')).toEqual([
      ['stdout', 'attaching usbredir to 1050:0407'],
      ['stdout', 'giving up'],
    ]);
    expect(lines.slice(4).filter(([stream]) => stream === 'stderr')).toEqual([
      ['stderr', 'usbredirect: no such device'],
    ]);
  });

  it('passes a bus-device ID on in its plain form', async () => {
    const { ctx, namespace } = await setUp('busdev');
    await redirectUsb(ctx, { member, device: '001-005', identity: 'alice' });
    expect(fakes.argvOf('virtctl')).toEqual(['usbredir', '1-5', member, '-n', namespace]);
  });

  it('ends the redirection cleanly with SIGINT when the signal aborts', async () => {
    const { ctx } = await setUp('abort');
    fakes.install('virtctl', fakeBehaviours.interruptible);
    const { lines, onOutput } = collect();
    const controller = new AbortController();
    const running = redirectUsb(ctx, {
      member,
      device: '1050:0407',
      identity: 'alice',
      onOutput,
      signal: controller.signal,
    });
    await new Promise<void>((resolve) => {
      const check = () => (lines.some(([, line]) => line === 'ready') ? resolve() : setImmediate(check));
      check();
    });
    controller.abort();
    expect(await running).toMatchObject({ outcome: 'ended', exitCode: 130, stoppedBy: 'abort' });
    expect(lines.at(-1)).toEqual(['stdout', 'got SIGINT, detaching']);
  });

  it('hands the notice to confirm and attaches nothing when it declines', async () => {
    const { ctx } = await setUp('decline');
    const shown: unknown[] = [];
    const result = await redirectUsb(ctx, {
      member,
      device: '1050:0407',
      identity: 'alice',
      confirm: (notice) => {
        shown.push(notice);
        return false;
      },
    });
    expect(result).toMatchObject({ outcome: 'declined', device: '1050:0407' });
    expect(shown).toEqual([usbSecurityNotice()]);
    expect(existsSync(join(fakes.dir, 'virtctl.argv'))).toBe(false);
  });
});

describe('redirectUsb refusals, each before anything starts or changes', () => {
  it('refuses a malformed device ID with INVALID_INPUT without asking the apiserver', async () => {
    const { ctx } = await setUp('badid', passthrough, false);
    const requests = ctx.cluster.requestTotal;
    const error = await redirectUsb(ctx, { member, device: '1-3.2', identity: 'alice' }).catch(
      (caught: unknown) => caught,
    );
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect(ctx.cluster.requestTotal).toBe(requests);
    expect(existsSync(join(fakes.dir, 'virtctl.argv'))).toBe(false);
  });

  it('refuses a user who does not hold the desktop with NOT_HOLDER', async () => {
    const { ctx, namespace } = await setUp('notholder');
    expect((await refusal(ctx, namespace, { identity: 'bob' })).code).toBe('NOT_HOLDER');
  });

  it('refuses a desktop nobody holds with CLAIM_ENDED', async () => {
    const { ctx, namespace } = await setUp('ended', passthrough, false);
    expect((await refusal(ctx, namespace)).code).toBe('CLAIM_ENDED');
  });

  it('refuses an expired claim with CLAIM_EXPIRED', async () => {
    const { ctx, namespace, clock } = await setUp('expired');
    clock.advance(61 * 60_000);
    expect((await refusal(ctx, namespace)).code).toBe('CLAIM_EXPIRED');
  });

  it('refuses a claimed member that is not a KubeVirt VM with UNSUPPORTED_BACKEND', async () => {
    const { ctx, namespace } = await setUp('notvm', passthrough, false);
    await createClaimLease(ctx, namespace, 'ct-member', 'alice');
    const error = await refusal(ctx, namespace, { member: 'ct-member' });
    expect(error.code).toBe('UNSUPPORTED_BACKEND');
    expect(error.message).toMatch(/no KubeVirt VirtualMachine/);
  });

  it('answers a claimed and an unclaimed container member that USB redirection is a VM feature, with no flag to pass', async () => {
    const namespace = await createNamespace(cluster(), 'ctmember');
    const vdi = createVdi({
      kubeConfig: cluster().kubeConfig,
      namespace,
      clock: createTestClock(new Date()),
    });
    await vdi.applyCtPool({ spec: { name: 'devbox', image: 'ghcr.io/acme/devbox:1.4', size: 2 } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    for (const pod of ['devbox-1', 'devbox-2']) {
      await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get(pod), {
        describe: `Pod ${namespace}/${pod} to be Ready`,
        until: (found) =>
          found?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
      });
    }
    const { member: claimed } = await vdi.claim({ pool: 'devbox', identity: 'alice', kind: 'ct' });
    const unclaimed = claimed === 'devbox-1' ? 'devbox-2' : 'devbox-1';

    for (const ctMember of [claimed, unclaimed]) {
      const error = await refusal(vdi.context, namespace, { member: ctMember });
      expect([ctMember, error.code]).toEqual([ctMember, 'UNSUPPORTED_BACKEND']);
      expect(error.message).toMatch(
        new RegExp(`^ct/${namespace}/${ctMember} is a container desktop: a container has no USB controller`),
      );
      expect(error.message).toContain('Claim a desktop from a VM pool');
      expect(error.message).not.toContain('--kind');
      expect(error.details).toEqual({ desktop: `ct/${namespace}/${ctMember}`, kind: 'ct' });
    }
    expect((await vdi.getDesktop({ member: claimed, kind: 'ct' })).owner).toBe('alice');
  });

  it('refuses a VM without clientPassthrough and says how to enable it', async () => {
    const { ctx, namespace } = await setUp('nopassthrough', {});
    const error = await refusal(ctx, namespace);
    expect(error.code).toBe('UNSUPPORTED_BACKEND');
    expect(error.message).toContain('add `clientPassthrough: {}` under spec.template.spec.domain.devices');
  });

  it('refuses a claimed desktop that does not run with DESKTOP_STOPPED', async () => {
    const { ctx, namespace } = await setUp('stopped', passthrough, false);
    await createClaimLease(ctx, namespace, member, 'alice');
    expect((await refusal(ctx, namespace)).code).toBe('DESKTOP_STOPPED');
  });

  it('refuses when virtctl is not on the PATH, with how to install it', async () => {
    const { ctx, namespace } = await setUp('novirtctl');
    fakes.uninstall('virtctl');
    fakes.usePath('only');
    const error = await refusal(ctx, namespace);
    expect(error.code).toBe('COMMAND_NOT_FOUND');
    expect(error.message).toMatch(/^virtctl is not on your PATH/);
    expect(error.message).toContain('kubectl krew install virt');
  });

  it('refuses when usbredirect, which virtctl starts to read the device, is not on the PATH', async () => {
    const { ctx, namespace } = await setUp('nousbredirect');
    fakes.uninstall('usbredirect');
    fakes.usePath('only');
    const error = await refusal(ctx, namespace);
    expect(error.code).toBe('COMMAND_NOT_FOUND');
    expect(error.message).toMatch(/^usbredirect is not on your PATH/);
    expect(error.message).toContain('apt install usbredirect');
  });
});

/** Grants `user` exactly what docs/usb.md asks for, and waits until the apiserver authorizes by it. */
async function grantUsbredir(namespace: string, user: string): Promise<void> {
  const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const metadata = { name: 'corral-vdi-usbredir' };
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata,
      rules: [
        {
          apiGroups: ['subresources.kubevirt.io'],
          resources: ['virtualmachineinstances/usbredir'],
          verbs: ['get'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
  const reviews = cluster().kubeConfig.makeApiClient(AuthorizationV1Api);
  const resourceAttributes = {
    namespace,
    group: 'subresources.kubevirt.io',
    resource: 'virtualmachineinstances',
    subresource: 'usbredir',
    verb: 'get',
  };
  await waitFor(
    async () =>
      (await reviews.createSubjectAccessReview({ body: { spec: { user, resourceAttributes } } })).status
        ?.allowed === true,
    { describe: `${user} to be granted get on virtualmachineinstances/usbredir` },
  );
}

interface StandInReport {
  device: string;
  sent: string[];
  guestVersion?: string;
  echoed: string[];
  error?: string;
}

describe("redirectUsb with KubeVirt's virtctl, through the apiserver to the simulator", () => {
  let virtctl: string;
  const report = () => join(fakes.dir, 'usbredirect.report.json');
  const readReport = () => JSON.parse(readFileSync(report(), 'utf8')) as StandInReport;
  const originalKubeconfig = process.env.KUBECONFIG;

  beforeAll(() => {
    virtctl = kubevirtVirtctl();
  }, 20 * 60_000);
  beforeEach(() => {
    fakes.uninstall('virtctl');
    symlinkSync(virtctl, join(fakes.dir, 'virtctl'));
    fakes.install('usbredirect', [
      `USBREDIRECT_REPORT='${report()}' exec '${process.execPath}' '${usbredirectStandIn}' "$@"`,
    ]);
  });
  afterEach(() => {
    if (originalKubeconfig === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = originalKubeconfig;
  });

  it('relays the device stream both ways: the guest answers its hello and echoes its packets, in order, until the signal detaches it', async () => {
    const { ctx, namespace } = await setUp('real');
    await grantUsbredir(namespace, 'alice');
    process.env.KUBECONFIG = cluster().userKubeconfigPath('alice');
    const { lines, onOutput } = collect();
    const controller = new AbortController();
    const running = redirectUsb(ctx, {
      member,
      device: '1050:0407',
      identity: 'alice',
      onOutput,
      signal: controller.signal,
    });

    const done = await waitFor(() => (existsSync(report()) ? readReport() : undefined), {
      describe: 'the usbredirect stand-in to have its packets echoed',
    });
    expect(fakes.argvOf('usbredirect')).toEqual([
      '--device',
      '1050:0407',
      '--to',
      expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    ]);
    expect(done.error).toBeUndefined();
    expect(done.guestVersion).toBe(simulatedGuestVersion);
    expect(done.echoed).toEqual(done.sent.slice(1));
    const labels = done.sent.map((hex) => {
      const packet = Buffer.from(hex, 'hex');
      return usbredirPacketLabel({
        type: packet.readUInt32LE(0),
        id: packet.readUInt32LE(8),
        payload: packet.subarray(usbredirHeaderBytes),
      });
    });
    await waitFor(() => ctx.cluster.getVmi(namespace, member), {
      describe: 'the simulated guest to record the packets in the order they were sent',
      until: (vmi) => vmi?.metadata.annotations?.[simulatorAnnotations.usbredirPackets] === labels.join(' '),
    });

    controller.abort();
    expect(await running).toMatchObject({ outcome: 'ended', stoppedBy: 'abort', exitCode: 1 });
    expect(lines).toContainEqual(['stderr', 'context canceled']);
  });

  it("ends with virtctl's error when the caller may not get virtualmachineinstances/usbredir, before usbredirect starts", async () => {
    const { ctx, namespace } = await setUp('forbidden');
    process.env.KUBECONFIG = cluster().userKubeconfigPath('alice');
    const { lines, onOutput } = collect();
    const result = await redirectUsb(ctx, { member, device: '1050:0407', identity: 'alice', onOutput });
    expect(result).toMatchObject({ outcome: 'ended', exitCode: 1 });
    expect(lines.filter(([stream]) => stream === 'stderr')).toContainEqual([
      'stderr',
      `Can't access VMI ${member}: virtualmachineinstances.subresources.kubevirt.io "${member}" is forbidden: ` +
        `User "alice" cannot get resource "virtualmachineinstances/usbredir" in API group "subresources.kubevirt.io" ` +
        `in the namespace "${namespace}"`,
    ]);
    expect(existsSync(join(fakes.dir, 'usbredirect.argv'))).toBe(false);
  });

  it(`ends with virtctl's error when ${usbredirSlots} devices are already attached to the desktop`, async () => {
    const { ctx, namespace } = await setUp('slots');
    process.env.KUBECONFIG = cluster().kubeconfigPath;
    const attached = await Promise.all(
      Array.from({ length: usbredirSlots }, () =>
        openKubeWebSocket(
          cluster().kubeConfig,
          `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/${member}/usbredir`,
          { protocol: 'plain.kubevirt.io', maxPayload: 1 << 20, doing: 'attach a device' },
        ),
      ),
    );
    try {
      const { lines, onOutput } = collect();
      const result = await redirectUsb(ctx, { member, device: '1050:0407', identity: 'alice', onOutput });
      expect(result).toMatchObject({ outcome: 'ended', exitCode: 1 });
      // virt-api wraps the handler's refusal in an internal error, and virtctl wraps that once more
      const refusals = [
        `Can't access VMI ${member}: Internal error occurred: Internal error occurred: ` +
          "Can't connect to websocket (503): websocket: bad handshake",
        // virt-api 1.6 names the dial instead
        `Can't access VMI ${member}: Internal error occurred: dialing virt-handler: websocket: bad handshake`,
      ];
      const stderr = lines.filter(([stream]) => stream === 'stderr').map(([, line]) => line);
      expect(
        stderr.filter((line) => refusals.includes(line)),
        stderr.join('\n'),
      ).toHaveLength(1);
    } finally {
      for (const socket of attached) socket.terminate();
    }
  });
});
