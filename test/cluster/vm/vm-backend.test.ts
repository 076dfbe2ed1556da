import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { VdiContext } from '../../../src/context.js';
import type { DesktopBackend, MemberFacts } from '../../../src/desktop-backend.js';
import type { KubeCluster } from '../../../src/kube/cluster.js';
import { cloneKind } from '../../../src/kube/resource-kinds.js';
import type { VirtualMachine, VmDevices } from '../../../src/kubevirt-types.js';
import { simulatorAnnotations } from '../../../src/testing/kubevirt/fault-knobs.js';
import { createTestClock, type TestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { createVmBackend } from '../../../src/vm/vm-backend.js';
import { CloneFaultCluster } from '../../support/clone-faults.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { failureOf } from '../../support/failure-of.js';

const cluster = useSharedCluster();

/** The clone-fault adapter, with a concurrent writer that changes each busy VM just before every conditional patch of it. */
class FaultyCluster extends CloneFaultCluster {
  readonly busy = new Set<string>();
  private writes = 0;

  override async patchVm(namespace: string, name: string, patch: Record<string, unknown>) {
    const conditional = (patch.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    if (this.busy.has(name) && conditional) {
      await super.patchVm(namespace, name, { metadata: { annotations: { other: String(++this.writes) } } });
    }
    return await super.patchVm(namespace, name, patch);
  }
}

interface Setup {
  namespace: string;
  clock: TestClock;
  kube: FaultyCluster;
  ctx: VdiContext;
  vms: DesktopBackend;
}

async function setUp(prefix: string): Promise<Setup> {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const kube = new FaultyCluster(cluster().kubeConfig);
  const ctx: VdiContext = { ...vdi.context, cluster: kube };
  return { namespace, clock, kube, ctx, vms: createVmBackend(ctx) };
}

function vm(
  name: string,
  labels: Record<string, string>,
  devices: VmDevices = {},
  annotations: Record<string, string> = {},
): VirtualMachine {
  return {
    metadata: { name, labels, annotations },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: {
            memory: { guest: '128Mi' },
            devices: { interfaces: [{ name: 'default', masquerade: {} }], ...devices },
          },
          // KubeVirt's admission refuses an interface without a network of its name
          networks: [{ name: 'default', pod: {} }],
        },
      },
    },
  };
}

const pool = (name: string) => ({ 'corral.dev/vdi-pool': name });
const ephemeral = (name: string) => ({ ...pool(name), 'corral.dev/vdi-ephemeral': 'true' });

async function waitForPower(vms: DesktopBackend, namespace: string, member: string, power: string) {
  await waitFor(
    async () => {
      const facts = await vms.readMember({ namespace, member });
      return facts?.power === power && (power !== 'running' || facts.address !== undefined);
    },
    { describe: `${namespace}/${member} to be ${power}` },
  );
}

/** A golden VM, and ephemeral members cloned from it by name as a pool create leaves them. */
async function createEphemeralPool(kube: KubeCluster, namespace: string, members: string[]): Promise<void> {
  await kube.createVm(namespace, vm('golden', { app: 'desktop' }, {}, { description: 'golden' }));
  for (const member of members) {
    await kube.createVm(
      namespace,
      vm(member, ephemeral('eph'), {}, { 'corral.dev/vdi-source': 'golden', 'user-state': 'dirty' }),
    );
  }
}

const listeners: Server[] = [];
afterEach(async () => {
  await Promise.all(
    listeners.splice(0).map((server) => new Promise((resolve) => server.close(() => resolve(undefined)))),
  );
});

describe('the VM backend against the real apiserver and the KubeVirt simulator', () => {
  it('lists the members of one pool, or of every pool, with facts from each VM and its VMI', async () => {
    const { namespace, kube, vms } = await setUp('vm-list');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool'), { autoattachSerialConsole: false }));
    await kube.createVm(namespace, vm('devpool-2', pool('devpool')));
    await kube.createVm(namespace, vm('other-1', pool('other')));
    await kube.createVm(namespace, vm('golden', {}));
    await vms.startMember({ namespace, member: 'devpool-1' });
    await waitFor(
      async () => (await vms.readMember({ namespace, member: 'devpool-1' }))?.phase === 'Running',
      {
        describe: 'devpool-1 to show Running',
      },
    );

    const members = await vms.listMembers(namespace, 'devpool');
    const byName = new Map(members.map((facts) => [facts.member, facts]));
    expect([...byName.keys()].sort()).toEqual(['devpool-1', 'devpool-2']);
    expect(byName.get('devpool-1')).toMatchObject({
      kind: 'vm',
      pool: 'devpool',
      desktopId: `vm/${namespace}/devpool-1`,
      power: 'running',
      phase: 'Running',
      address: expect.stringMatching(/^127\.\d+\.\d+\.\d+$/),
      node: expect.any(String),
      consoles: ['vnc'],
      deleting: false,
      previousInstance: false,
    });
    expect(byName.get('devpool-2')).toMatchObject({ power: 'stopped', address: undefined });
    expect((await vms.listMembers(namespace)).map((facts) => facts.member).sort()).toEqual([
      'devpool-1',
      'devpool-2',
      'other-1',
    ]);
    expect(await vms.listMembers(namespace, 'nopool')).toEqual([]);
  });

  it('reads one member; a missing one is undefined and a VM of no pool is not found', async () => {
    const { namespace, kube, vms } = await setUp('vm-read');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool'), { gpus: [] }));
    await kube.createVm(namespace, vm('golden', {}));
    // the simulator's first status write changes the resourceVersion; compare after it
    const read = await waitFor(() => kube.getVm(namespace, 'devpool-1'), {
      describe: 'the simulator to write the status of devpool-1',
      until: (found) => found?.status?.printableStatus === 'Stopped',
    });

    const facts = (await vms.readMember({ namespace, member: 'devpool-1' })) as MemberFacts;
    expect(facts).toMatchObject({
      member: 'devpool-1',
      uid: read?.metadata.uid,
      resourceVersion: read?.metadata.resourceVersion,
      ephemeral: false,
      consoles: ['vnc', 'serial'],
    });
    expect(await vms.readMember({ namespace, member: 'devpool-9' })).toBeUndefined();
    expect((await failureOf(vms.readMember({ namespace, member: 'golden' }))).code).toBe('MEMBER_NOT_FOUND');
  });

  it('starts and stops a member, and says "already" when asked again', async () => {
    const { namespace, kube, vms } = await setUp('vm-power');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool')));
    const ref = { namespace, member: 'devpool-1' };

    expect(await vms.startMember(ref)).toBe('changed');
    await waitForPower(vms, namespace, 'devpool-1', 'running');
    expect(await vms.startMember(ref)).toBe('already');
    expect(await vms.stopMember(ref)).toBe('changed');
    await waitForPower(vms, namespace, 'devpool-1', 'stopped');
    expect(await vms.stopMember(ref)).toBe('already');
  });

  it('turns a refused start or stop into START_FAILED or STOP_FAILED, and a missing member into MEMBER_NOT_FOUND', async () => {
    const { namespace, kube, vms } = await setUp('vm-power-fails');
    await kube.createVm(
      namespace,
      vm('devpool-1', pool('devpool'), {}, { [simulatorAnnotations.failStart]: '409 host is out of memory' }),
    );
    const before = await kube.getVm(namespace, 'devpool-1');

    const start = await failureOf(vms.startMember({ namespace, member: 'devpool-1' }));
    expect(start).toMatchObject({ code: 'START_FAILED', retryable: true });
    expect(start.message).toContain('host is out of memory');
    expect((await kube.getVm(namespace, 'devpool-1'))?.spec.runStrategy).toBe(before?.spec.runStrategy);

    await kube.createVm(
      namespace,
      vm('devpool-2', pool('devpool'), {}, { [simulatorAnnotations.failStop]: 'agent hung' }),
    );
    await vms.startMember({ namespace, member: 'devpool-2' });
    await waitForPower(vms, namespace, 'devpool-2', 'running');
    const stop = await failureOf(vms.stopMember({ namespace, member: 'devpool-2' }));
    expect(stop.code).toBe('STOP_FAILED');
    expect((await vms.readMember({ namespace, member: 'devpool-2' }))?.power).toBe('running');

    for (const call of [vms.startMember, vms.stopMember]) {
      expect((await failureOf(call({ namespace, member: 'devpool-9' }))).code).toBe('MEMBER_NOT_FOUND');
    }
  });

  it('resets a persistent member by stopping it, keeping the same VM', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-stop');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool')));
    const ref = { namespace, member: 'devpool-1', pool: 'devpool' };
    await vms.startMember(ref);
    await waitForPower(vms, namespace, 'devpool-1', 'running');
    const uid = (await kube.getVm(namespace, 'devpool-1'))?.metadata.uid;

    expect(await vms.resetMember(ref)).toBe('stopped');
    await waitForPower(vms, namespace, 'devpool-1', 'stopped');
    expect((await kube.getVm(namespace, 'devpool-1'))?.metadata.uid).toBe(uid);
    expect(await vms.resetMember(ref)).toBe('stopped');

    const wrongPool = await failureOf(vms.resetMember({ ...ref, pool: 'otherpool' }));
    expect(wrongPool.code).toBe('INVALID_INPUT');
    expect(wrongPool.message).toContain('belongs to pool "devpool"');
  });

  it('resets an ephemeral member by recreating it from its golden VM under the same name', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-recreate');
    await createEphemeralPool(kube, namespace, ['eph-1']);
    const before = await kube.getVm(namespace, 'eph-1');

    expect(await vms.resetMember({ namespace, member: 'eph-1', pool: 'eph' })).toBe('recreated');
    const after = (await kube.getVm(namespace, 'eph-1')) as VirtualMachine;
    expect(after.metadata.uid).not.toBe(before?.metadata.uid);
    expect(after.metadata.annotations?.['user-state']).toBeUndefined();
    expect(after.metadata.annotations?.['corral.dev/vdi-source']).toBe('golden');
    expect(after.metadata.labels).toMatchObject(ephemeral('eph'));
    expect(after.spec.runStrategy).toBe('Halted');
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(await vms.readMember({ namespace, member: 'eph-1' })).toMatchObject({
      ephemeral: true,
      source: 'golden',
    });
  });

  it('leaves an ephemeral member absent after a failed clone, and a second reset makes it again', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-fails');
    await createEphemeralPool(kube, namespace, ['eph-1', 'eph-2']);
    kube.faults['eph-1'] = { [simulatorAnnotations.fail]: 'snapshot refused by the storage class' };
    const ref = { namespace, member: 'eph-1', pool: 'eph' };

    const failed = await failureOf(vms.resetMember(ref));
    expect(failed.code).toBe('CLONE_FAILED');
    // KubeVirt's reason when the reset read the write that failed the clone, else where to read it (its event)
    expect(failed.message).toMatch(
      new RegExp(
        `snapshot \\S+ does not exist anymore|kubectl describe virtualmachineclone -n ${namespace} eph-1-clone`,
      ),
    );
    expect(await kube.getVm(namespace, 'eph-1')).toBeUndefined();
    expect(await vms.readMember({ namespace, member: 'eph-1' })).toBeUndefined();
    // the failed clone stays for inspection until the next reset clears it away
    expect((await kube.resource(cloneKind).in(namespace).list()).map((clone) => clone.status?.phase)).toEqual(
      ['Failed'],
    );

    delete kube.faults['eph-1'];
    expect(await vms.resetMember(ref)).toBe('recreated');
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.labels).toMatchObject(ephemeral('eph'));
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('makes a lone ephemeral member again after a failed clone, reading its golden VM from that clone', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-lone');
    await createEphemeralPool(kube, namespace, ['eph-1']);
    kube.faults['eph-1'] = { [simulatorAnnotations.fail]: 'snapshot refused' };
    const ref = { namespace, member: 'eph-1', pool: 'eph' };
    expect((await failureOf(vms.resetMember(ref))).code).toBe('CLONE_FAILED');
    expect(await kube.getVm(namespace, 'eph-1')).toBeUndefined();

    delete kube.faults['eph-1'];
    expect(await vms.resetMember(ref)).toBe('recreated');
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.annotations?.['corral.dev/vdi-source']).toBe(
      'golden',
    );
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
  });

  it('times out a slow clone by the injected clock, and a second reset waits for the same clone to finish', async () => {
    const { namespace, clock, kube, vms } = await setUp('vm-reset-slow');
    await createEphemeralPool(kube, namespace, ['eph-1']);
    // long enough that a loaded machine still sees the clone unfinished when the clock moves past the timeout
    kube.faults['eph-1'] = { [simulatorAnnotations.phaseDelayMs]: '3000' };
    const ref = { namespace, member: 'eph-1', pool: 'eph' };

    const first = failureOf(vms.resetMember(ref, { timeoutMs: 60_000 }));
    await waitFor(async () => (await kube.resource(cloneKind).in(namespace).list()).length === 1, {
      describe: 'the clone of eph-1 to exist',
    });
    clock.advance(60_000);
    const timedOut = await first;
    expect(timedOut).toMatchObject({ code: 'CLONE_TIMEOUT', retryable: true });
    expect(timedOut.message).toMatch(
      new RegExp(`^timed out after 1m waiting for the clone to produce VM ${namespace}/eph-1\\b`),
    );
    const [pending] = await kube.resource(cloneKind).in(namespace).list();
    expect(pending?.status?.phase).not.toBe('Succeeded');

    expect(await vms.resetMember(ref)).toBe('recreated');
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.annotations?.['user-state']).toBeUndefined();
  });

  it('refuses a recreate whose golden VM is gone before deleting anything', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-golden');
    await createEphemeralPool(kube, namespace, ['eph-1']);
    await kube.deleteVm(namespace, 'golden');
    await waitFor(async () => (await kube.getVm(namespace, 'golden')) === undefined, {
      describe: 'the golden VM to go',
    });
    const before = await kube.getVm(namespace, 'eph-1');

    const error = await failureOf(vms.resetMember({ namespace, member: 'eph-1', pool: 'eph' }));
    expect(error.code).toBe('GOLDEN_NOT_FOUND');
    expect(error.message).toMatch(/^golden VM "golden" not found in namespace /);
    expect((await kube.getVm(namespace, 'eph-1'))?.metadata.uid).toBe(before?.metadata.uid);
  });

  it('says MEMBER_NOT_FOUND for a gone member whose pool tells nothing to recreate it from', async () => {
    const { namespace, kube, vms } = await setUp('vm-reset-gone');
    await kube.createVm(
      namespace,
      vm('devpool-2', pool('devpool'), {}, { 'corral.dev/vdi-source': 'golden' }),
    );

    const persistent = await failureOf(vms.resetMember({ namespace, member: 'devpool-1', pool: 'devpool' }));
    expect(persistent.code).toBe('MEMBER_NOT_FOUND');
    const empty = await failureOf(vms.resetMember({ namespace, member: 'eph-1', pool: 'eph' }));
    expect(empty.code).toBe('MEMBER_NOT_FOUND');
    expect(await kube.listVms(namespace)).toHaveLength(1);
  });

  it('presents a claim on the member, rereading it when it changed, and writes nothing when already shown', async () => {
    const { namespace, kube, vms } = await setUp('vm-present');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool')));
    // the simulator's status write comes first, so only the test's own write makes the facts stale
    await waitForPower(vms, namespace, 'devpool-1', 'stopped');
    const stale = (await vms.readMember({ namespace, member: 'devpool-1' })) as MemberFacts;
    await kube.patchVm(namespace, 'devpool-1', { metadata: { annotations: { touched: 'yes' } } });
    const claim = { holder: 'alice@example.com', claimedAt: '2026-01-02T03:04:05.000000Z', sessionId: 's-1' };

    // asked to write exactly on the facts given, it writes nothing on a member that changed since
    const exactBefore = kube.requestCounts.get('patch') ?? 0;
    expect(await vms.presentClaim(stale, { ...claim, exact: true })).toEqual({ kind: 'changed' });
    expect((kube.requestCounts.get('patch') ?? 0) - exactBefore).toBe(1);
    expect(
      (await kube.getVm(namespace, 'devpool-1'))?.metadata.annotations?.['corral.dev/vdi-assigned-to'],
    ).toBe(undefined);

    const patchesBefore = kube.requestCounts.get('patch') ?? 0;
    await vms.presentClaim(stale, claim);
    // the first write met the stale resourceVersion, the second one went through
    expect((kube.requestCounts.get('patch') ?? 0) - patchesBefore).toBe(2);
    const shown = (await vms.readMember({ namespace, member: 'devpool-1' })) as MemberFacts;
    expect(shown.presentation).toEqual({
      holder: 'alice@example.com',
      label: 'alice_example.com',
      claimedAt: claim.claimedAt,
      sessionId: 's-1',
    });

    const patchesAfter = kube.requestCounts.get('patch') ?? 0;
    await vms.presentClaim(shown, claim);
    expect(kube.requestCounts.get('patch') ?? 0).toBe(patchesAfter);

    await kube.deleteVm(namespace, 'devpool-1');
    await waitFor(async () => (await kube.getVm(namespace, 'devpool-1')) === undefined, {
      describe: 'devpool-1 to go',
    });
    const gone = await failureOf(vms.presentClaim(stale, { ...claim, holder: 'bob' }));
    expect(gone.code).toBe('MEMBER_NOT_FOUND');
  });

  it('clears the presentation only while it names the released holder', async () => {
    const { namespace, kube, vms } = await setUp('vm-clear');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool')));
    await kube.createVm(
      namespace,
      vm('legacy-1', { ...pool('legacy'), 'corral.dev/vdi-assigned-to': 'carol' }),
    );
    const facts = (await vms.readMember({ namespace, member: 'devpool-1' })) as MemberFacts;
    await vms.presentClaim(facts, {
      holder: 'bob',
      claimedAt: '2026-01-02T03:04:05.000000Z',
      sessionId: 's-2',
    });
    const ref = { namespace, member: 'devpool-1' };

    expect(await vms.clearPresentation(ref, 'alice')).toBe(false);
    expect((await vms.readMember(ref))?.presentation.holder).toBe('bob');
    // a take-back of an older session of bob's leaves the copy of his newer one
    expect(await vms.clearPresentation(ref, 'bob', 's-1')).toBe(false);
    expect((await vms.readMember(ref))?.presentation.sessionId).toBe('s-2');
    expect(await vms.clearPresentation(ref, 'bob', 's-2')).toBe(true);
    expect((await vms.readMember(ref))?.presentation).toEqual({
      holder: undefined,
      label: undefined,
      claimedAt: undefined,
      sessionId: undefined,
    });
    expect(await vms.clearPresentation(ref, 'bob')).toBe(false);
    // a v0.6.0 assignment is a label alone
    expect(await vms.clearPresentation({ namespace, member: 'legacy-1' }, 'carol')).toBe(true);
    expect((await kube.getVm(namespace, 'legacy-1'))?.metadata.labels).toEqual(pool('legacy'));
    expect(await vms.clearPresentation({ namespace, member: 'devpool-9' }, 'bob')).toBe(false);
  });

  it('gives up with a retryable CONFLICT when the member keeps changing, having written no copy', async () => {
    const { namespace, kube, vms } = await setUp('vm-busy');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool')));
    await waitForPower(vms, namespace, 'devpool-1', 'stopped');
    const ref = { namespace, member: 'devpool-1' };
    const facts = (await vms.readMember(ref)) as MemberFacts;
    await vms.presentClaim(facts, {
      holder: 'bob',
      claimedAt: '2026-01-02T03:04:05.000000Z',
      sessionId: 's-1',
    });
    kube.busy.add('devpool-1');

    const present = await failureOf(
      vms.presentClaim(facts, {
        holder: 'alice',
        claimedAt: '2026-01-02T04:00:00.000000Z',
        sessionId: 's-2',
      }),
    );
    expect(present).toMatchObject({ code: 'CONFLICT', retryable: true });
    expect((await vms.readMember(ref))?.presentation.holder).toBe('bob');
    const clear = await failureOf(vms.clearPresentation(ref, 'bob'));
    expect(clear).toMatchObject({ code: 'CONFLICT', retryable: true });
    expect((await vms.readMember(ref))?.presentation.holder).toBe('bob');
  });

  it('gathers connect facts of a running member, probing RDP at its address', async () => {
    const { namespace, kube, vms } = await setUp('vm-connect');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool'), { autoattachGraphicsDevice: false }));
    await kube.createVm(namespace, vm('devpool-2', pool('devpool')));
    const ref = { namespace, member: 'devpool-1' };

    const stopped = await failureOf(vms.gatherConnectFacts(ref));
    expect(stopped.code).toBe('DESKTOP_STOPPED');
    await vms.startMember(ref);
    await waitForPower(vms, namespace, 'devpool-1', 'running');
    const address = (await vms.readMember(ref))?.address as string;
    const server = createServer((socket) => socket.destroy());
    listeners.push(server);
    await new Promise<void>((resolve) => server.listen(3389, address, resolve));

    expect(await vms.gatherConnectFacts(ref, { probeTimeoutMs: 1000 })).toEqual({
      kind: 'vm',
      namespace,
      vm: 'devpool-1',
      rdpProbe: { host: address, port: 3389, outcome: 'answered', timeoutMs: 1000 },
      graphicsDevice: false,
      serialConsole: true,
    });
    await vms.startMember({ namespace, member: 'devpool-2' });
    await waitForPower(vms, namespace, 'devpool-2', 'running');
    const refused = await vms.gatherConnectFacts(
      { namespace, member: 'devpool-2' },
      { probeTimeoutMs: 1000 },
    );
    expect(refused).toMatchObject({ graphicsDevice: true, rdpProbe: { outcome: 'refused' } });
    expect((await failureOf(vms.gatherConnectFacts({ namespace, member: 'devpool-9' }))).code).toBe(
      'MEMBER_NOT_FOUND',
    );
  });

  it('tells whether a member takes redirected USB devices, and what to change when not', async () => {
    const { namespace, kube, vms } = await setUp('vm-usb');
    await kube.createVm(namespace, vm('devpool-1', pool('devpool'), { clientPassthrough: {} }));
    await kube.createVm(namespace, vm('devpool-2', pool('devpool')));

    expect(await vms.checkUsbSupport({ namespace, member: 'devpool-1' })).toEqual({ kind: 'supported' });
    await vms.startMember({ namespace, member: 'devpool-2' });
    await waitForPower(vms, namespace, 'devpool-2', 'running');
    // added to the template while it runs: the running instance still lacks it
    await kube.patchVm(namespace, 'devpool-2', {
      spec: { template: { spec: { domain: { devices: { clientPassthrough: {} } } } } },
    });
    const support = await vms.checkUsbSupport({ namespace, member: 'devpool-2' });
    expect(support).toMatchObject({
      kind: 'unsupported',
      reason: expect.stringContaining('restart the desktop'),
    });
    expect((await failureOf(vms.checkUsbSupport({ namespace, member: 'devpool-9' }))).code).toBe(
      'MEMBER_NOT_FOUND',
    );
  });

  it('refuses malformed names with INVALID_INPUT before any request goes out', async () => {
    const { kube, vms } = await setUp('vm-input');
    const before = kube.requestTotal;
    const calls: Array<() => Promise<unknown>> = [
      () => vms.listMembers('Not A Namespace'),
      () => vms.listMembers('ok', 'Bad Pool'),
      () => vms.readMember({ namespace: 'ok', member: 'Bad_Member' }),
      () => vms.startMember({ namespace: 'ok', member: '' }),
      () => vms.stopMember({ namespace: '-bad', member: 'devpool-1' }),
      () => vms.resetMember({ namespace: 'ok', member: 'devpool-1', pool: '' }),
      () => vms.clearPresentation({ namespace: 'ok', member: 'devpool-1' }, ' alice'),
      () => vms.gatherConnectFacts({ namespace: 'ok', member: 'a/b' }),
      () => vms.checkUsbSupport({ namespace: 'ok', member: 'UPPER' }),
    ];
    for (const call of calls) expect((await failureOf(call())).code).toBe('INVALID_INPUT');
    expect(kube.requestTotal).toBe(before);
  });
});
