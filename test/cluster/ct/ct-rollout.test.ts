import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { rolloutLine } from '../../../src/cli/rollout-flags.js';
import { rolloutKey, specConfigMapName } from '../../../src/ct/ct-keys.js';
import { removalHolder, sourceAnnotation } from '../../../src/keys.js';
import { configMapKind, podKind } from '../../../src/kube/resource-kinds.js';
import { readPoolPlans } from '../../../src/pool-status/read-pool-plans.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { type RunningWatch, type WatchedObject, watchPath } from '../../chaos/watch-path.js';
import { caught, createTestNamespace, useSharedCluster } from '../../support/cluster.js';
import { startTsProcess } from '../../support/ts-process.js';
import type { ReconcilerConfig } from './ct-reconciler.js';

const cluster = useSharedCluster();
const entry = fileURLToPath(new URL('./ct-reconciler.ts', import.meta.url));
const oldImage = 'ghcr.io/acme/devbox:1.4';
const newImage = 'ghcr.io/acme/devbox:1.5';
const alice = 'alice@example.com';

const children: ChildProcess[] = [];
const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

interface ReconcilerLine {
  pid: number;
  event?: string;
  log?: string;
  [key: string]: unknown;
}

function startReconciler(config: ReconcilerConfig, lines: ReconcilerLine[]): ChildProcess {
  const child = startTsProcess(entry, config, lines);
  children.push(child);
  return child;
}

interface Seen {
  revision: number;
  kind: 'lease' | 'pod';
  type: string;
  object: WatchedObject;
}

interface PodState {
  uid: string;
  image: string;
  ready: boolean;
  deleting: boolean;
}

/**
 * Watches the namespace's Leases and member Pods from before the image change; `check` replays them in the cluster's
 * order and gives, at every moment, the Ready free members (a Pod Ready, not being deleted, no Lease holding it) and
 * the members out for the roll-out (under a removal Lease, or free with a Pod not Ready or being deleted), the fewest
 * and the most seen, each member's Pods on the new image (one uid per making), and every Pod on the new image that
 * was deleted.
 */
function watchImageRollout(namespace: string) {
  const seen: Seen[] = [];
  const errors: unknown[] = [];
  const watches: RunningWatch[] = (['lease', 'pod'] as const).map((kind) =>
    watchPath(
      cluster().kubeConfig,
      kind === 'lease'
        ? `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`
        : `/api/v1/namespaces/${namespace}/pods`,
      {},
      (type, object) => seen.push({ revision: Number(object.metadata?.resourceVersion), kind, type, object }),
      (error) => errors.push(error),
    ),
  );
  stops.push(() => {
    for (const watch of watches) watch.stop();
  });
  return {
    ready: Promise.all(watches.map((watch) => watch.ready)),
    /** Replays every change; the counts are taken from revision `from` on (the image change's write). */
    check(from: number) {
      const holders = new Map<string, string>();
      const pods = new Map<string, PodState>();
      const newPods = new Map<string, Set<string>>();
      const deletedNew: string[] = [];
      let fewestReadyFree = Number.POSITIVE_INFINITY;
      let mostOut = 0;
      let mostMembers = 0;
      for (const { revision, kind, type, object } of [...seen].sort(
        (left, right) => left.revision - right.revision,
      )) {
        const name = object.metadata?.name ?? '';
        if (kind === 'lease') {
          const member = name.replace(/^corral-vdi-/, '');
          const holder = (object.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '';
          if (type === 'DELETED' || holder === '') holders.delete(member);
          else holders.set(member, holder);
        } else {
          const metadata = object.metadata as {
            annotations?: Record<string, string>;
            deletionTimestamp?: string;
          };
          const status = object.status as
            | { conditions?: Array<{ type: string; status: string }> }
            | undefined;
          const state: PodState = {
            uid: String(object.metadata?.uid),
            image: metadata.annotations?.[sourceAnnotation] ?? '',
            ready: status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
            deleting: metadata.deletionTimestamp !== undefined,
          };
          if (state.image === newImage) {
            newPods.set(name, (newPods.get(name) ?? new Set()).add(state.uid));
            if ((type === 'DELETED' || state.deleting) && !deletedNew.includes(name)) deletedNew.push(name);
          }
          if (type === 'DELETED') pods.delete(name);
          else pods.set(name, state);
        }
        let readyFree = 0;
        let out = 0;
        for (const member of new Set([...pods.keys(), ...holders.keys()])) {
          const pod = pods.get(member);
          const holder = holders.get(member);
          if (holder === removalHolder) out += 1;
          // a free Pod going without a Lease is a removal's, finishing: not out for a replacement
          else if (holder === undefined && pod && !pod.deleting) {
            if (pod.ready) readyFree += 1;
            else out += 1;
          }
        }
        if (revision < from) continue;
        fewestReadyFree = Math.min(fewestReadyFree, readyFree);
        mostOut = Math.max(mostOut, out);
        mostMembers = Math.max(mostMembers, pods.size);
      }
      return { errors, events: seen.length, fewestReadyFree, mostOut, mostMembers, newPods, deletedNew };
    },
  };
}

async function setUp(prefix: string, spec: Record<string, unknown>) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
  await vdi.applyCtPool({ spec: { name: 'devbox', image: oldImage, ...spec } });
  await vdi.reconcileCtPool({ name: 'devbox' });
  await waitAllReady(vdi, namespace, Number(spec.size));
  return { namespace, vdi, kube: vdi.context.cluster };
}

async function waitAllReady(vdi: Vdi, namespace: string, size: number) {
  await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct'), {
    describe: `the ${size} member Pods of ${namespace} to be Ready`,
    until: (pods) =>
      pods.length === size &&
      pods.every(
        (pod) =>
          !pod.metadata.deletionTimestamp &&
          pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ),
  });
}

/** The revision of the spec's write: the image change. */
async function changedAt(vdi: Vdi, namespace: string): Promise<number> {
  const configMap = await vdi.context.cluster
    .resource(configMapKind)
    .in(namespace)
    .get(specConfigMapName('devbox'));
  return Number(configMap?.metadata.resourceVersion);
}

async function recordOf(vdi: Vdi, namespace: string) {
  const configMap = await vdi.context.cluster
    .resource(configMapKind)
    .in(namespace)
    .get(specConfigMapName('devbox'));
  const text = configMap?.data?.[rolloutKey];
  return text === undefined ? undefined : (JSON.parse(text) as { rebuilding: string[]; finishedAt?: string });
}

describe('container pool image roll-outs', () => {
  it('replaces free members at most maxUnavailable at once, making an extra member first, and never takes the Ready free members below the buffer', async () => {
    const { namespace, vdi, kube } = await setUp('ct-roll', { size: 4, minReady: 2, maxUnavailable: 2 });
    const { member: claimed } = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    const events: Array<{ member: string; step: string }> = [];
    vdi.events.on('pool-rollout', ({ member, step }) => events.push({ member, step }));
    let rolledOut = 0;
    vdi.events.on('pool-rolled-out', () => {
      rolledOut += 1;
    });
    const watch = watchImageRollout(namespace);
    await watch.ready;

    const refused = await caught(
      vdi.applyCtPool({ spec: { name: 'devbox', image: newImage, size: 4, minReady: 2, maxUnavailable: 0 } }),
    );
    expect([refused.code, refused.details.fields]).toEqual(['INVALID_INPUT', ['maxUnavailable']]);
    expect((await kube.resource(podKind).in(namespace).get('devbox-1'))?.metadata.annotations).toMatchObject({
      [sourceAnnotation]: oldImage,
    });

    await vdi.applyCtPool({
      spec: { name: 'devbox', image: newImage, size: 4, minReady: 2, maxUnavailable: 2 },
    });
    const from = await changedAt(vdi, namespace);
    // the first pass takes one free member (one beyond the buffer) and makes one extra for the next
    const first = await vdi.reconcileCtPool({ name: 'devbox' });
    expect(first.replaced).toHaveLength(1);
    expect(first.created).toEqual(['devbox-5']);
    expect(first.rollOut).toMatchObject({ to: newImage, onTarget: 0, total: 4, finished: false });
    expect((await recordOf(vdi, namespace))?.rebuilding).toHaveLength(2);
    const status = await vdi.readPoolStatus({ name: 'devbox', kind: 'ct' });
    expect(rolloutLine(status.rollOut ?? expect.fail('no roll-out in the status'))).toMatch(
      new RegExp(
        `^roll-out: \\d+/\\d+ on ${newImage.replace(/[.]/g, '\\.')}; rebuilding .*1 claimed wait for their release.*\\(at most 2 at once\\)$`,
      ),
    );
    const [planned] = (await readPoolPlans(vdi.context, [namespace])).filter((pool) => pool.kind === 'ct');
    expect(planned?.rollOut).toMatchObject({
      to: newImage,
      maxUnavailable: 2,
      paused: false,
      finishedAt: null,
    });

    // the broker's loop, here a pass after another, until every free member runs the new image
    await waitFor(() => vdi.reconcileCtPool({ name: 'devbox' }), {
      describe: 'the free members to run the new image, Ready',
      timeoutMs: 60_000,
      until: (pass) =>
        pass.rollOut?.onTarget === 3 && pass.rollOut.rebuilding.length === 0 && pass.created.length === 0,
    });
    expect((await kube.resource(podKind).in(namespace).get(claimed))?.metadata.annotations).toMatchObject({
      [sourceAnnotation]: oldImage,
    });
    const during = watch.check(from);
    onTestFailed(() => console.log(JSON.stringify({ ...during, newPods: [...during.newPods] })));
    expect(during.errors).toEqual([]);
    // the buffer and maxUnavailable are both reached, and never passed
    expect(during.fewestReadyFree).toBe(2);
    expect(during.mostOut).toBe(2);
    expect(during.mostMembers).toBe(5);
    // the extra member stayed; old ones went in its place, and no member made on the new image was taken away
    expect(during.deletedNew).toEqual([]);
    expect(events.filter((event) => event.step === 'rebuilt').length).toBeGreaterThanOrEqual(2);

    await vdi.release({ member: claimed, identity: alice, kind: 'ct' });
    await waitAllReady(vdi, namespace, 4);
    const last = await vdi.reconcileCtPool({ name: 'devbox' });
    expect(last.rollOut).toMatchObject({ onTarget: 4, total: 4, finished: true });
    expect(rolledOut).toBe(1);
    expect((await recordOf(vdi, namespace))?.finishedAt).toBeDefined();
    const pods = await kube.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct');
    expect(pods.map((pod) => pod.metadata.annotations?.[sourceAnnotation])).toEqual(Array(4).fill(newImage));
  });

  it('pauses and resumes a roll-out: paused, a pass begins no replacement', async () => {
    const { namespace, vdi } = await setUp('ct-roll-pause', { size: 2 });
    expect((await caught(vdi.setPoolRolloutPaused({ name: 'devbox', paused: true }))).code).toBe(
      'POOL_NOT_FOUND',
    );
    await vdi.applyCtPool({ spec: { name: 'devbox', image: newImage, size: 2 } });
    expect((await vdi.reconcileCtPool({ name: 'devbox' })).replaced).toHaveLength(1);
    expect(await vdi.setPoolRolloutPaused({ name: 'devbox', paused: true })).toMatchObject({
      to: newImage,
      paused: true,
    });
    await waitAllReady(vdi, namespace, 2);
    const paused = await vdi.reconcileCtPool({ name: 'devbox' });
    expect(paused.replaced).toEqual([]);
    expect(paused.rollOut).toMatchObject({ onTarget: 1, total: 2, paused: true, rebuilding: [] });
    expect((await vdi.readPoolStatus({ name: 'devbox', kind: 'ct' })).rollOut).toMatchObject({
      paused: true,
    });

    await vdi.setPoolRolloutPaused({ name: 'devbox', paused: false });
    expect((await vdi.reconcileCtPool({ name: 'devbox' })).replaced).toHaveLength(1);
    await waitAllReady(vdi, namespace, 2);
    expect((await vdi.reconcileCtPool({ name: 'devbox' })).rollOut).toMatchObject({
      onTarget: 2,
      finished: true,
    });
  });

  it('is finished by the next process when the one running it is killed half way, each member replaced once', async () => {
    const { namespace, vdi } = await setUp('ct-roll-kill', { size: 4, minReady: 2, maxUnavailable: 2 });
    const watch = watchImageRollout(namespace);
    await watch.ready;
    await vdi.applyCtPool({
      spec: { name: 'devbox', image: newImage, size: 4, minReady: 2, maxUnavailable: 2 },
    });
    const from = await changedAt(vdi, namespace);
    const lines: ReconcilerLine[] = [];
    const config = { kubeconfigPath: cluster().kubeconfigPath, namespace, pool: 'devbox' };
    const first = startReconciler(config, lines);
    // killed while it replaces a member, once it has replaced others
    await waitFor(
      async () => {
        const [pods, leases] = await Promise.all([
          vdi.context.cluster.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct'),
          vdi.context.cluster.listLeases(namespace),
        ]);
        const onNew = pods.filter(
          (pod) =>
            pod.metadata.annotations?.[sourceAnnotation] === newImage &&
            pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return {
          onNew: onNew.length,
          removing: leases.some((lease) => lease.spec.holderIdentity === removalHolder),
        };
      },
      {
        describe: 'the first reconciler to be half way, replacing a member',
        timeoutMs: 60_000,
        until: ({ onNew, removing }) => onNew >= 1 && removing,
      },
    );
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const left = await recordOf(vdi, namespace);
    expect(left?.finishedAt).toBeUndefined();
    expect(left?.rebuilding.length).toBeGreaterThan(0);

    startReconciler(config, lines);
    await waitFor(() => recordOf(vdi, namespace), {
      describe: 'the second reconciler to finish the roll-out',
      timeoutMs: 60_000,
      until: (record) => record?.finishedAt !== undefined,
    });
    const finished = lines.filter((line) => line.event === 'pool-rolled-out');
    expect(finished).toHaveLength(1);
    expect(finished[0]?.pid).not.toBe(first.pid);
    const seen = watch.check(from);
    onTestFailed(() => console.log(JSON.stringify({ ...seen, newPods: [...seen.newPods], lines })));
    expect(seen.errors).toEqual([]);
    expect(seen.fewestReadyFree).toBe(2);
    expect(seen.mostOut).toBe(2);
    expect(seen.deletedNew).toEqual([]);
    const pods = await vdi.context.cluster.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct');
    expect(pods.map((pod) => pod.metadata.annotations?.[sourceAnnotation])).toEqual(Array(4).fill(newImage));
    // each member now on the new image was made on it once: one Pod uid each
    for (const pod of pods) expect(seen.newPods.get(pod.metadata.name ?? '')?.size).toBe(1);
  });
});
