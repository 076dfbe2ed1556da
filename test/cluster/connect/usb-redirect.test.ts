import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import { isVdiError, type VdiError } from '../../../src/errors.js';
import type { VmDevices } from '../../../src/kubevirt-types.js';
import type { OutputStream } from '../../../src/launch/run-process.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { type RedirectUsbOptions, redirectUsb } from '../../../src/usb/redirect-usb.js';
import { usbSecurityNotice } from '../../../src/usb/security-notice.js';
import { createVdi } from '../../../src/vdi.js';
import { useSharedCluster, waitForRunningVmi } from '../../support/cluster.js';
import {
  createFakeCommands,
  type FakeCommands,
  fakeBehaviours,
} from '../../unit/connect-planner/fake-commands.js';
import { createClaimLease, createMember, createNamespace } from './connect-support.js';

// virtctl and usbredirect cannot be installed where these tests run. Small shell scripts named virtctl and
// usbredirect stand in for them on the PATH (see fake-commands.ts): they record their arguments and print,
// exit or wait for signals as each test asks, so the runner is tested against a real child process.
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
  return {
    spec: vm?.spec,
    labels: vm?.metadata.labels,
    annotations: vm?.metadata.annotations,
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
