import { createServer, type Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { connect } from '../../../src/connect-planner/connect.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { createVdi } from '../../../src/vdi.js';
import { useSharedCluster, waitForRunningVmi } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';
import { createClaimLease, createMember, createNamespace, waitForNoVmi } from './connect-support.js';

const cluster = useSharedCluster();

async function setUp(prefix: string, devices = {}) {
  const namespace = await createNamespace(cluster(), prefix);
  const clock = createTestClock(new Date());
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  await createMember(vdi.context.cluster, namespace, 'devpool-1', devices);
  return { namespace, clock, vdi, ctx: vdi.context };
}

/** Claims the one member for alice through the claims service, which starts it, and waits until it runs. */
async function claimRunning(prefix: string, devices = {}) {
  const setup = await setUp(prefix, devices);
  await setup.vdi.claim({ pool: 'devpool', identity: 'alice' });
  const vmi = await waitForRunningVmi(setup.ctx.cluster, setup.namespace, 'devpool-1');
  return { ...setup, ip: vmi.status?.interfaces?.[0]?.ipAddress as string };
}

async function listenOn3389(host: string): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(3389, host, resolve));
  return server;
}

describe('connect against the real apiserver and real sockets', () => {
  it('makes RDP the target while TCP 3389 answers on the VMI address, and VNC once it stops answering', async () => {
    const { ctx, namespace, ip } = await claimRunning('rdp');
    const server = await listenOn3389(ip);
    try {
      const withRdp = await connect(ctx, { member: 'devpool-1', identity: 'alice' });
      expect(withRdp).toMatchObject({
        desktopId: `vm/${namespace}/devpool-1`,
        holder: 'alice',
        target: { protocol: 'rdp', host: ip, port: 3389 },
        fallbacks: [
          { protocol: 'vnc', namespace, vm: 'devpool-1' },
          { protocol: 'serial', namespace, vm: 'devpool-1' },
        ],
        skipped: [{ protocol: 'terminal' }],
      });
      expect(withRdp.launches.map((launch) => launch.argv)).toEqual([
        ['xfreerdp', `/v:${ip}`],
        ['virtctl', 'vnc', 'devpool-1', '-n', namespace],
        ['virtctl', 'console', 'devpool-1', '-n', namespace],
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }

    const withoutRdp = await connect(ctx, { member: 'devpool-1', identity: 'alice' });
    expect(withoutRdp.target).toEqual({ protocol: 'vnc', namespace, vm: 'devpool-1' });
    expect(withoutRdp.fallbacks).toEqual([{ protocol: 'serial', namespace, vm: 'devpool-1' }]);
    expect(withoutRdp.skipped[0]).toEqual({
      protocol: 'rdp',
      reason: `TCP 3389 did not answer at ${ip}:3389 from this machine (connection refused)`,
    });
  });

  it('falls back to the serial console for a VM without a graphics device', async () => {
    const { ctx, namespace } = await claimRunning('serial', { autoattachGraphicsDevice: false });
    const result = await connect(ctx, { member: 'devpool-1', identity: 'alice' });
    expect(result.target).toEqual({ protocol: 'serial', namespace, vm: 'devpool-1' });
    expect(result.fallbacks).toEqual([]);
    expect(result.skipped.map((entry) => entry.protocol)).toEqual(['rdp', 'vnc', 'terminal']);
    expect(result.skipped[1]?.reason).toBe(
      'the VM has no graphics device (autoattachGraphicsDevice is false)',
    );
    expect(result.launches).toEqual([
      { protocol: 'serial', argv: ['virtctl', 'console', 'devpool-1', '-n', namespace] },
    ]);
  });

  it('refuses a VM with no console at all, saying what would give it one', async () => {
    const { ctx } = await claimRunning('noconsole', {
      autoattachGraphicsDevice: false,
      autoattachSerialConsole: false,
    });
    const error = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'alice' }));
    expect(error.code).toBe('UNSUPPORTED_BACKEND');
    expect(error.message).toMatch(/offers no console: start the RDP service in the guest/);
  });

  it('gives another user NOT_HOLDER, and an admin the target with the holder named', async () => {
    const { ctx } = await claimRunning('holder');
    const error = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'bob' }));
    expect([error.code, error.httpStatus]).toEqual(['NOT_HOLDER', 403]);
    expect(error.message).not.toContain('alice');
    const asAdmin = await connect(ctx, { member: 'devpool-1', identity: 'root', asAdmin: true });
    expect(asAdmin).toMatchObject({ holder: 'alice', target: { protocol: 'vnc' } });
  });

  it('answers CLAIM_ENDED (404) once the claim is released, and for a member never claimed', async () => {
    const { ctx, vdi } = await claimRunning('ended');
    await vdi.release({ member: 'devpool-1', identity: 'alice' });
    const released = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'alice' }));
    expect([released.code, released.httpStatus]).toEqual(['CLAIM_ENDED', 404]);
    expect(released.message).toMatch(/Claim the pool to get a desktop/);

    const fresh = await setUp('unclaimed');
    const never = await failureOf(
      connect(fresh.ctx, { member: 'devpool-1', identity: 'alice', asAdmin: true }),
    );
    expect(never.code).toBe('CLAIM_ENDED');
  });

  it('answers CLAIM_EXPIRED (409) once the Lease is an hour past its renewal on the test clock', async () => {
    const { ctx, clock } = await claimRunning('expired');
    clock.advance(61 * 60_000);
    const error = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'alice' }));
    expect([error.code, error.httpStatus]).toEqual(['CLAIM_EXPIRED', 409]);
    expect(error.message).toMatch(/claim the pool again/);
  });

  it('answers DESKTOP_STOPPED (409) for a claimed desktop that does not run', async () => {
    const { ctx, namespace } = await setUp('stopped');
    await createClaimLease(ctx, namespace, 'devpool-1', 'alice');
    const error = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'alice' }));
    expect([error.code, error.httpStatus]).toEqual(['DESKTOP_STOPPED', 409]);
    expect(error.message).toMatch(/start it first/);
  });

  it('answers DESKTOP_STOPPED after the holder stopped a running desktop', async () => {
    const { ctx, namespace } = await claimRunning('stopping');
    await ctx.cluster.stopVm(namespace, 'devpool-1');
    await waitForNoVmi(ctx.cluster, namespace, 'devpool-1');
    const error = await failureOf(connect(ctx, { member: 'devpool-1', identity: 'alice' }));
    expect(error.code).toBe('DESKTOP_STOPPED');
  });

  it('tells a missing member from a claim whose member is not a KubeVirt VM', async () => {
    const { ctx, namespace } = await setUp('missing');
    const missing = await failureOf(connect(ctx, { member: 'devpool-9', identity: 'alice' }));
    expect(missing.code).toBe('MEMBER_NOT_FOUND');
    await createClaimLease(ctx, namespace, 'ct-member', 'alice');
    const notVm = await failureOf(connect(ctx, { member: 'ct-member', identity: 'alice' }));
    expect(notVm.code).toBe('UNSUPPORTED_BACKEND');
  });
});
