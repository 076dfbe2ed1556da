import { CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { cloneKind, snapshotKind } from '../../../src/kube/resource-kinds.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import {
  collectOutput,
  createGoldenVm,
  createNamespace,
  jsonOf,
  runCli,
  startCli,
  useCliCluster,
} from './cli-support.js';

// A 1 ms clone timeout is spent by the first look at a clone, with no real wait; KubeVirt's clone controller runs
// on meanwhile, so the undo meets clones at their snapshot, their restore or done.
const cluster = useCliCluster();

// Every test works in a namespace of its own, so the file's tests run side by side.
describe.concurrent('corral-vdi pool create that gives up half way', () => {
  it('gives up after --clone-timeout, removes what it made, and says where to look', async () => {
    const namespace = await createNamespace(cluster(), 'stuck');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const kubeconfig = ['--kubeconfig', cluster().kubeconfigPath];
    const kube = new KubeCluster(cluster().kubeConfig);

    const text = await runCli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '--clone-timeout',
      '1ms',
      '-n',
      namespace,
      ...kubeconfig,
    ]);
    expect(text).toMatchObject({ code: 1, stdout: '' });
    const lines = text.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    // two members wait for their one snapshot of the golden VM first, and the timeout is spent there
    expect(lines[0]).toMatch(
      new RegExp(
        `^error: timed out after 1ms waiting for VirtualMachineSnapshot ${namespace}/devpool-snapshot-[0-9a-f]{8} ` +
          'of the golden VM to be ready: .* Creating pool "devpool" failed: devpool-1: timed-out; devpool-2: not-started\\. ',
      ),
    );
    // the snapshot is deleted, so the line points at KubeVirt's events for it, which outlast it
    expect(lines[0]).toMatch(
      new RegExp(
        `kubectl get events -n ${namespace} --field-selector involvedObject\\.name=devpool-snapshot-[0-9a-f]{8}"`,
      ),
    );
    expect(lines[0]).toContain('Everything this call made was removed again.');
    expect(lines[0]).toMatch(/If the clones are only slow, run it again with a longer --clone-timeout\.$/);

    const json = await runCli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '1',
      '--clone-timeout',
      '1ms',
      '-n',
      namespace,
      '-o',
      'json',
      ...kubeconfig,
    ]);
    expect(json.code).toBe(1);
    expect(jsonOf(json)).toMatchObject({
      error: {
        code: 'CLONE_TIMEOUT',
        retryable: true,
        details: {
          pool: 'devpool',
          namespace,
          members: [{ member: 'devpool-1', clone: 'devpool-1-clone', status: 'timed-out' }],
        },
      },
    });

    const listed = await runCli(['pool', 'list', '-n', namespace, ...kubeconfig]);
    expect(listed.stdout).toBe(`no pools in namespace ${namespace}\n`);
    // the snapshot the first create took is deleted again; the second create's clone took one of its own, which a
    // cluster's garbage collector deletes with the clone
    await waitFor(() => kube.resource(snapshotKind).in(namespace).list('corral.dev/vdi-pool=devpool'), {
      describe: "the pool's snapshot of the golden VM to be gone",
      until: (snapshots) => snapshots.length === 0,
    });
  });

  it('undoes what it made when interrupted with Ctrl-C', async () => {
    const namespace = await createNamespace(cluster(), 'interrupted');
    await createGoldenVm(cluster(), namespace, 'golden-desktop');
    const kube = new KubeCluster(cluster().kubeConfig);
    const customObjects = cluster().kubeConfig.makeApiClient(CustomObjectsApi);
    const listRestores = async (inNamespace: string) =>
      (
        (await customObjects.listNamespacedCustomObject({
          group: 'snapshot.kubevirt.io',
          version: 'v1beta1',
          namespace: inNamespace,
          plural: 'virtualmachinerestores',
        })) as { items: { status?: { complete?: boolean } }[] }
      ).items;
    const child = startCli([
      'pool',
      'create',
      'devpool',
      '--from',
      'golden-desktop',
      '--size',
      '2',
      '--clone-timeout',
      '10m',
      '-n',
      namespace,
      '--kubeconfig',
      cluster().kubeconfigPath,
    ]);
    const output = collectOutput(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // both clones restore from the one snapshot of the golden VM: the undo meets at least one restore under way
    await waitFor(() => kube.resource(cloneKind).in(namespace).list(), {
      describe: 'both clones to appear, one with its restore made',
      until: (clones) => clones.length >= 2 && clones.some((clone) => clone.status?.restoreName),
      timeoutMs: 60_000,
    });
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(output.text()).toContain(
      'interrupted: undoing what was made so far (press Ctrl-C again to quit at once)\n',
    );
    expect(output.text()).toMatch(
      /error: Creating pool "devpool" was cancelled: .* Everything this call made was removed again\./,
    );
    // a restore that outlived the undo would write its member now
    await waitFor(() => listRestores(namespace), {
      describe: 'every restore of the clones to end',
      until: (restores) => restores.every((restore) => restore.status?.complete === true),
    });
    expect(await kube.resource(cloneKind).in(namespace).list()).toEqual([]);
    expect(await kube.listVms(namespace, 'corral.dev/vdi-pool')).toEqual([]);
    // and the snapshot they restored from is deleted once they are
    await waitFor(() => kube.resource(snapshotKind).in(namespace).list(), {
      describe: 'the snapshot of the golden VM to be gone',
      until: (snapshots) => snapshots.length === 0,
    });
  });
});
