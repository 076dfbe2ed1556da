import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { rolloutLine } from '../../../src/cli/rollout-flags.js';
import { releasingAnnotation, removalHolder, sourceAnnotation } from '../../../src/keys.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { createBrokerMetrics } from '../../../src/metrics/broker-metrics.js';
import { readPoolCounts } from '../../../src/metrics/read-pool-counts.js';
import { poolSettingsOf } from '../../../src/pool-settings.js';
import { readPoolPlans } from '../../../src/pool-status/read-pool-plans.js';
import { createPool } from '../../../src/pools/pool-service.js';
import { readPoolSettingsConfigMap } from '../../../src/pools/pool-settings-store.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { type RunningWatch, type WatchedObject, watchPath } from '../../chaos/watch-path.js';
import { createTestNamespace, stoppedVm, usePrivateCluster } from '../../support/cluster.js';
import { startTsProcess } from '../../support/ts-process.js';
import type { ReplicaConfig } from './broker-replica.js';

// a plane of the file's own: the kill test stops its virt-controller to hold the leader mid-rebuild
const cluster = usePrivateCluster({ kubevirt: 'real' });
const entry = fileURLToPath(new URL('./broker-replica.ts', import.meta.url));
const buffer = 2;
const reclaimWarningMs = 10_000;

/** One line a replica process wrote: an event of its SDK or a log line. */
interface ReplicaLine {
  replica: string;
  at: number;
  event?: string;
  log?: string;
  [key: string]: unknown;
}

const children: ChildProcess[] = [];
const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function startReplica(config: ReplicaConfig, lines: ReplicaLine[]): ChildProcess {
  const child = startTsProcess(entry, config, lines);
  children.push(child);
  return child;
}

/** One change seen by a watch, in the cluster's order (etcd's revision). */
interface Seen {
  revision: number;
  kind: 'lease' | 'vm';
  type: string;
  object: WatchedObject;
}

/**
 * Watches the namespace's Leases and VMs; `check` replays them in the cluster's order from `from` on, and names every
 * moment fewer than `buffer` free members ran, every member deleted or stopped while a user held it without a
 * release under way, and each member's VM objects (their uids, one per making).
 */
function watchRollout(namespace: string, pool: string) {
  const seen: Seen[] = [];
  const errors: unknown[] = [];
  const watches: RunningWatch[] = (['lease', 'vm'] as const).map((kind) =>
    watchPath(
      cluster().kubeConfig,
      kind === 'lease'
        ? `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`
        : `/apis/kubevirt.io/v1/namespaces/${namespace}/virtualmachines`,
      {},
      (type, object) => seen.push({ revision: Number(object.metadata?.resourceVersion), kind, type, object }),
      (error) => errors.push(error),
    ),
  );
  return {
    ready: Promise.all(watches.map((watch) => watch.ready)),
    stop: () => {
      for (const watch of watches) watch.stop();
    },
    check(from: number) {
      const holders = new Map<string, { holder: string; releasing: boolean }>();
      const vms = new Map<string, { strategy: string; deleting: boolean; member: boolean }>();
      const uids = new Map<string, Set<string>>();
      const touched: string[] = [];
      const belowBuffer: string[] = [];
      for (const { revision, kind, type, object } of [...seen].sort((a, b) => a.revision - b.revision)) {
        const name = object.metadata?.name ?? '';
        if (kind === 'lease') {
          const spec = object.spec as { holderIdentity?: string } | undefined;
          const annotations = (object.metadata?.annotations ?? {}) as Record<string, string>;
          if (type === 'DELETED') holders.delete(name);
          else
            holders.set(name, {
              holder: spec?.holderIdentity ?? '',
              releasing: annotations[releasingAnnotation] !== undefined,
            });
        } else {
          const labels = (object.metadata?.labels ?? {}) as Record<string, string>;
          const member = labels['corral.dev/vdi-pool'] === pool;
          if (member) uids.set(name, (uids.get(name) ?? new Set()).add(object.metadata?.uid ?? ''));
          const claim = holders.get(leaseNameFor(name));
          const userHeld =
            claim !== undefined && claim.holder !== '' && claim.holder !== removalHolder && !claim.releasing;
          const strategy = (object.spec as { runStrategy?: string } | undefined)?.runStrategy ?? '';
          const deleting = type === 'DELETED' || object.metadata?.deletionTimestamp !== undefined;
          const before = vms.get(name);
          const stopped = strategy === 'Halted' && before !== undefined && before.strategy !== 'Halted';
          if (member && userHeld && (deleting || stopped))
            touched.push(`${name} ${deleting ? 'deleted' : 'stopped'} held by ${claim.holder}`);
          if (type === 'DELETED') vms.delete(name);
          else vms.set(name, { strategy, deleting, member });
        }
        if (revision < from) continue;
        const freeRunning = [...vms].filter(([name, vm]) => {
          const holder = holders.get(leaseNameFor(name))?.holder ?? '';
          return vm.member && !vm.deleting && vm.strategy === 'Always' && holder === '';
        }).length;
        if (freeRunning < buffer) belowBuffer.push(`${freeRunning} free running at revision ${revision}`);
      }
      return { touched, belowBuffer, uids, errors, events: seen.length };
    },
  };
}

describe('a pool rolled out to a new golden VM', () => {
  it('rebuilds a pool of 10 with 4 claimed, never below its buffer, claimed members only after release or the warned deadline, finished once each by the next leader after the first is killed half way', async () => {
    const namespace = await createTestNamespace(cluster(), 'rollout');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const ctx = vdi.context;
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v1', { app: 'desktop' }));
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v2', { app: 'desktop', image: 'v2' }));
    await createPool(ctx, { name: 'devpool', from: 'golden-v1', size: 10, namespace });
    const held = new Map<string, string>();
    for (let index = 1; index <= 4; index += 1) {
      const identity = `user-${index}@example.com`;
      held.set((await vdi.claim({ pool: 'devpool', identity })).member, identity);
    }
    await vdi.setPool({ name: 'devpool', namespace, minReady: buffer });
    const watcher = watchRollout(namespace, 'devpool');
    stops.push(watcher.stop);
    await watcher.ready;

    const lines: ReplicaLine[] = [];
    onTestFailed(() => {
      for (const line of lines) console.log(JSON.stringify(line));
    });
    const replica = (identity: string) =>
      startReplica(
        { kubeconfigPath: cluster().kubeconfigPath, namespace, identity, reclaimWarningMs },
        lines,
      );
    const processes = new Map([
      ['replica-a', replica('replica-a')],
      ['replica-b', replica('replica-b')],
    ]);
    const leading = (identity: string) =>
      lines.some(
        (line) => line.replica === identity && line.log?.startsWith(`broker: leading as ${identity}`),
      );
    const first = await waitFor(() => ['replica-a', 'replica-b'].find(leading), {
      describe: 'a replica to lead',
    });
    await waitFor(() => vdi.readPoolStatus({ name: 'devpool', namespace }), {
      describe: `the leader to keep ${buffer} spares running`,
      until: (status) => status.warm >= buffer,
    });

    const deadline = new Date(Date.now() + 40_000);
    const started = await vdi.startPoolRollout({
      name: 'devpool',
      namespace,
      from: 'golden-v2',
      maxUnavailable: 2,
      deadline,
    });
    expect(started).toMatchObject({
      onTarget: 0,
      total: 10,
      rollOut: { to: 'golden-v2', maxUnavailable: 2 },
    });
    const startedAt = Number(
      (await readPoolSettingsConfigMap(ctx, namespace, 'devpool'))?.metadata.resourceVersion,
    );

    // half way: once two members are rebuilt, stop KubeVirt's virt-controller so the rebuilds under way stop where
    // they are, and kill the leader mid-rebuild
    await waitFor(() => vdi.readPoolStatus({ name: 'devpool', namespace }), {
      describe: 'the first rebuilds',
      until: (status) => (status.rollOut?.onTarget ?? 0) >= 2,
    });
    const kubevirt = cluster().realKubevirt;
    if (!kubevirt) throw new Error('this file runs on KubeVirt’s own controllers');
    await kubevirt.stopController();
    // with virt-controller away, a rebuild the journal names cannot finish: its old VM keeps KubeVirt's finalizer,
    // or its clone makes no snapshot
    const journal = await waitFor(
      async () => poolSettingsOf(await readPoolSettingsConfigMap(ctx, namespace, 'devpool')).rollOut,
      { describe: 'rebuilds under way', until: (rollOut) => (rollOut?.rebuilding.length ?? 0) > 0 },
    );
    const onTargetAtKill = (await vdi.readPoolStatus({ name: 'devpool', namespace })).rollOut?.onTarget ?? 0;
    processes.get(first)?.kill('SIGKILL');
    await kubevirt.startController();
    const next = first === 'replica-a' ? 'replica-b' : 'replica-a';
    await waitFor(() => leading(next), { describe: `${next} to take over`, timeoutMs: 20_000 });

    // one holder releases; the other three keep their desktops until the deadline
    const [released, releasedBy] = [...held][0] as [string, string];
    await vdi.release({ member: released, identity: releasedBy });
    const finished = await waitFor(() => vdi.readPoolStatus({ name: 'devpool', namespace }), {
      describe: 'the roll-out to finish',
      until: (status) => status.rollOut?.finishedAt !== null && status.rollOut?.finishedAt !== undefined,
      timeoutMs: 90_000,
    });
    expect(finished.rollOut).toMatchObject({ onTarget: 10, total: 10, rebuilding: [], claimed: [] });
    expect(journal?.rebuilding.length).toBeGreaterThan(0);
    expect(onTargetAtKill).toBeGreaterThanOrEqual(2);
    expect(onTargetAtKill).toBeLessThan(10);

    // every member is made from golden-v2, once: one VM before and one after
    const vms = await ctx.cluster.listVms(namespace, 'corral.dev/vdi-pool=devpool');
    expect(vms).toHaveLength(10);
    for (const vm of vms) {
      expect(vm.metadata.annotations?.[sourceAnnotation]).toBe('golden-v2');
      expect(vm.metadata.labels?.image).toBe('v2');
    }
    const { touched, belowBuffer, uids, errors, events } = watcher.check(startedAt);
    expect(errors).toEqual([]);
    expect(events).toBeGreaterThan(100);
    expect(touched).toEqual([]);
    expect(belowBuffer).toEqual([]);
    expect(Object.fromEntries([...uids].map(([name, made]) => [name, made.size]))).toEqual(
      Object.fromEntries(vms.map((vm) => [vm.metadata.name, 2])),
    );

    // both leaders rebuilt members; the three claims kept past their release were warned, then reclaimed at the deadline
    const rebuiltBy = new Set(
      lines
        .filter((line) => line.event === 'pool-rollout' && line.step === 'rebuilt')
        .map((line) => line.replica),
    );
    expect(rebuiltBy).toEqual(new Set(['replica-a', 'replica-b']));
    const reclaimed = lines.filter((line) => line.event === 'reclaimed');
    expect(reclaimed.map((line) => [line.reason, line.holder]).sort()).toEqual(
      [...held]
        .slice(1)
        .map(([, identity]) => ['roll-out', identity])
        .sort(),
    );
    for (const reclaim of reclaimed) {
      expect(reclaim.at).toBeGreaterThanOrEqual(deadline.getTime());
      const warning = lines.find(
        (line) => line.event === 'reclaim-warning' && line.desktopId === reclaim.desktopId,
      );
      expect(warning).toMatchObject({ reason: 'roll-out', reclaimAt: deadline.toISOString() });
      expect(warning?.at).toBeLessThan(deadline.getTime());
    }
    expect(lines.filter((line) => line.event === 'pool-rolled-out')).toHaveLength(1);
  }, 180_000);

  it('pauses and resumes; an ephemeral member released meanwhile is made from the new golden VM by its release alone', async () => {
    const namespace = await createTestNamespace(cluster(), 'rollout-pause');
    const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    const ctx = vdi.context;
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v1', { app: 'desktop' }));
    await ctx.cluster.createVm(namespace, stoppedVm('golden-v2', { app: 'desktop' }));
    await createPool(ctx, { name: 'kiosk', from: 'golden-v1', size: 3, namespace, ephemeral: true });
    const { member } = await vdi.claim({ pool: 'kiosk', identity: 'ann@example.com' });
    const metrics = createBrokerMetrics({
      ctx,
      readPools: () => readPoolCounts(ctx, [namespace]),
      readPlans: () => readPoolPlans(ctx, [namespace]),
      readConsoles: () => [],
      log: () => {},
    });
    stops.push(metrics.detach);
    const watcher = watchRollout(namespace, 'kiosk');
    stops.push(watcher.stop);
    await watcher.ready;
    await expect(
      vdi.startPoolRollout({ name: 'kiosk', namespace, from: 'kiosk-1', maxUnavailable: 1 }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(
      vdi.startPoolRollout({ name: 'kiosk', namespace, from: 'golden-v2', maxUnavailable: 0 }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(vdi.startPoolRollout({ name: 'kiosk', namespace, from: 'golden-v3' })).rejects.toMatchObject(
      {
        code: 'GOLDEN_NOT_FOUND',
      },
    );
    expect((await vdi.readPoolStatus({ name: 'kiosk', namespace })).rollOut).toBeNull();

    await vdi.startPoolRollout({ name: 'kiosk', namespace, from: 'golden-v2' });
    await vdi.setPoolRolloutPaused({ name: 'kiosk', namespace, paused: true });
    expect(await vdi.keepPoolRollout({ name: 'kiosk', namespace })).toMatchObject({
      kind: 'kept',
      result: { rebuilt: [], paused: true, claimed: [member] },
    });
    // the claimed member is marked, paused or not, so its release makes it from the new golden VM
    expect(
      (await ctx.cluster.getVm(namespace, member))?.metadata.annotations?.['corral.dev/vdi-roll-to'],
    ).toBe('golden-v2');
    await vdi.setPoolRolloutPaused({ name: 'kiosk', namespace, paused: false });
    const pass = await vdi.keepPoolRollout({ name: 'kiosk', namespace });
    expect(pass).toMatchObject({ kind: 'kept', result: { onTarget: 1, total: 3, finished: false } });
    expect(rolloutLine((await vdi.readPoolStatus({ name: 'kiosk', namespace })).rollOut!)).toBe(
      `roll-out: 1/3 on golden-v2; 1 claimed wait for their release (at most 1 at once)`,
    );
    const text = await metrics.render();
    const labels = `kind="vm",namespace="${namespace}",pool="kiosk",to="golden-v2"`;
    expect(text).toContain(`corral_vdi_pool_rollout_members{${labels},state="on-target"} 1`);
    expect(text).toContain(`corral_vdi_pool_rollout_members{${labels},state="total"} 3`);
    expect(text).toContain(`corral_vdi_pool_rollout_members{${labels},state="waiting"} 1`);
    expect(text).toContain('corral_vdi_rollout_rebuilds_total{result="rebuilt"} 1');
    await vdi.keepPoolRollout({ name: 'kiosk', namespace });
    await vdi.release({ member, identity: 'ann@example.com' });
    expect((await ctx.cluster.getVm(namespace, member))?.metadata.annotations?.[sourceAnnotation]).toBe(
      'golden-v2',
    );
    expect(await vdi.keepPoolRollout({ name: 'kiosk', namespace })).toMatchObject({
      kind: 'kept',
      result: { rebuilt: [], onTarget: 3, total: 3, finished: true },
    });
    expect(await vdi.keepPoolRollout({ name: 'kiosk', namespace })).toMatchObject({ kind: 'finished' });
    const { uids, touched } = watcher.check(0);
    expect(touched).toEqual([]);
    expect([...uids.values()].map((made) => made.size)).toEqual([2, 2, 2]);
  }, 120_000);
});
