import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { MemoryAuditSink } from '../../../src/audit.js';
import { planConnect } from '../../../src/connect-planner/plan-connect.js';
import type { VdiContext } from '../../../src/context.js';
import { createCtBackend } from '../../../src/ct/ct-backend.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { configMapKind, podKind, pvcKind, serviceKind } from '../../../src/kube/resource-kinds.js';
import type { PodObject } from '../../../src/kube-objects.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi } from '../../../src/vdi.js';
import { caught, createTestNamespace, stoppedVm, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();
const image = 'ghcr.io/acme/devbox:1.4';
const alice = 'alice@example.com';
const bob = 'bob@example.com';

async function setUp(prefix: string, kube?: KubeCluster) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock });
  const ctx: VdiContext = kube ? { ...vdi.context, cluster: kube, backends: {} } : vdi.context;
  if (kube) ctx.backends.ct = createCtBackend(ctx);
  return { namespace, clock, vdi, ctx, kube: vdi.context.cluster };
}

async function podsOf(kube: KubeCluster, namespace: string): Promise<PodObject[]> {
  return (await kube.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct')).sort((a, b) =>
    (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
  );
}

// the node agent runs each Pod as a local process and reports it Ready
async function waitReady(kube: KubeCluster, namespace: string, name: string): Promise<PodObject | undefined> {
  return await waitFor(() => kube.resource(podKind).in(namespace).get(name), {
    describe: `Pod ${namespace}/${name} to be Ready`,
    until: (pod) => pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  });
}

async function waitMembers(kube: KubeCluster, namespace: string, names: string[]): Promise<void> {
  await waitFor(async () => (await podsOf(kube, namespace)).map((pod) => pod.metadata.name), {
    describe: `the member Pods of ${namespace} to be ${names.join(', ') || 'none'}`,
    until: (found) => JSON.stringify(found) === JSON.stringify(names),
  });
}

describe('container pools', () => {
  it('refuses a bad spec, a VM pool name and a missing ConfigMap permission, and writes nothing', async () => {
    const { namespace, vdi, kube } = await setUp('ct-bad');
    await kube.createVm(namespace, stoppedVm('desks-1', { 'corral.dev/vdi-pool': 'desks' }));
    const cases = [
      [{ name: 'devbox', image: 'Ghcr.io/Acme', size: 1 }, 'INVALID_INPUT', ['image']],
      [{ name: 'devbox', image, size: 5000 }, 'INVALID_INPUT', ['size']],
      [{ name: 'devbox', image, size: 1, env: { A: 1 } }, 'INVALID_INPUT', ['env.A']],
      [{ name: 'desks', image, size: 1 }, 'ALREADY_EXISTS', undefined],
    ] as const;
    for (const [spec, code, fields] of cases) {
      const error = await caught(vdi.applyCtPool({ spec }));
      expect(error.code).toBe(code);
      if (fields) expect(error.details.fields).toEqual(fields);
    }
    expect((await caught(vdi.applyCtPool({ spec: { name: 'desks', image, size: 1 } }))).message).toMatch(
      /taken .* by a VM pool/,
    );

    // a user who may read VMs but not ConfigMaps
    const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'vm-reader' },
        rules: [{ apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'vm-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vm-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }],
      },
    });
    const carol = createVdi({ kubeConfig: cluster().userKubeConfig('carol'), namespace });
    const forbidden = await caught(carol.applyCtPool({ spec: { name: 'devbox', image, size: 1 } }));
    expect(forbidden.code).toBe('FORBIDDEN');
    expect(forbidden.message).toMatch(/ConfigMap/);
    expect(await kube.resource(configMapKind).in(namespace).list('corral.dev/vdi-kind=ct')).toEqual([]);
  });

  it('refuses at apply what the apiserver or the kubelet would refuse of a member, naming each field, and writes nothing', async () => {
    const { namespace, vdi, kube } = await setUp('ct-dry-run');
    const cases = [
      [{ name: 'devbox', image, size: 1, imagePullPolcy: 'Always' }, ['imagePullPolcy'], /unknown field/],
      [
        { name: 'devbox', image, size: 1, resources: { limits: { cpus: '2' } } },
        ['resources.limits.cpus'],
        /is not a resource name/,
      ],
      // the apiserver takes any image; the kubelet would take Acme for a registry host
      [{ name: 'devbox', image: 'Acme/devbox:1.4', size: 1 }, ['image'], /registry host/],
      [
        {
          name: 'devbox',
          image,
          size: 1,
          resources: { requests: { memory: '4Gi' }, limits: { memory: '1Gi' } },
        },
        ['resources.requests'],
        /refuses the member's Pod: .*must be less than or equal to memory limit of 1Gi/,
      ],
      [
        { name: 'devbox', image, size: 1, home: { size: '0' } },
        ['home.size'],
        /refuses the member's PersistentVolumeClaim: .*must be greater than zero/,
      ],
    ] as const;
    for (const [spec, fields, message] of cases) {
      const error = await caught(vdi.applyCtPool({ spec }));
      expect([error.code, error.details.fields], JSON.stringify(spec)).toEqual(['INVALID_INPUT', fields]);
      expect(error.message).toMatch(message);
      expect(error.message).toMatch(/Nothing was written\.$/);
    }
    expect(await kube.resource(configMapKind).in(namespace).list('corral.dev/vdi-kind=ct')).toEqual([]);

    // a pool that exists keeps its spec when a new one is refused
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, home: { size: '1Gi' } } });
    const before = await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox');
    const refused = await caught(
      vdi.applyCtPool({ spec: { name: 'devbox', image, size: 2, home: { size: '0' } } }),
    );
    expect(refused.details.fields).toEqual(['home.size']);
    const after = await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox');
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(await kube.resource(podKind).in(namespace).list('corral.dev/vdi-kind=ct')).toEqual([]);
    expect(await kube.resource(pvcKind).in(namespace).list('corral.dev/vdi-kind=ct')).toEqual([]);
  });

  it('checks a spec with dry runs that need only create on the member kinds, as the documented Role grants', async () => {
    const { namespace } = await setUp('ct-dry-run-rbac');
    const rbac = cluster().kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const bind = async (user: string, memberKinds: string[]) => {
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: user },
          rules: [
            { apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: ['list'] },
            { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create'] },
            { apiGroups: [''], resources: memberKinds, verbs: ['create'] },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: user },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
      return createVdi({ kubeConfig: cluster().userKubeConfig(user), namespace, retry: { retries: 0 } });
    };
    const spec = { name: 'devbox', image, size: 1, home: { size: '1Gi' } };
    const withoutPods = await bind('no-pods', ['services', 'persistentvolumeclaims']);
    const forbidden = await waitFor(() => caught(withoutPods.applyCtPool({ spec })), {
      describe: 'the Role of no-pods to take effect',
      until: (error) => error.code === 'FORBIDDEN' && /pods/.test(error.message),
    });
    expect(forbidden.message).toMatch(/cannot create resource "pods"/);
    const admin = createVdi({ kubeConfig: cluster().kubeConfig, namespace });
    expect(
      await admin.context.cluster.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox'),
    ).toBeUndefined();

    const creator = await bind('creator', ['pods', 'services', 'persistentvolumeclaims']);
    const applied = await waitFor(() => creator.applyCtPool({ spec }), {
      describe: 'the Role of creator to take effect',
    });
    expect(applied.created).toBe(true);
  });

  it('applies a spec, reconciles members that its delete cascades to, and lists and gets the pool', async () => {
    const { namespace, vdi, kube } = await setUp('ct-apply');
    const applied = await vdi.applyCtPool({
      spec: {
        name: 'devbox',
        image,
        size: 2,
        env: { TEAM: 'core' },
        home: { size: '1Gi' },
        labels: { team: 'core' },
      },
    });
    expect(applied).toMatchObject({ id: `ct/${namespace}/devbox`, created: true });
    const [configMap] = await kube
      .resource(configMapKind)
      .in(namespace)
      .list('corral.dev/vdi-kind=ct,corral.dev/vdi-pool=devbox');
    expect(configMap?.metadata.name).toBe('corral-vdi-ct-devbox');

    const pass = await vdi.reconcileCtPool({ name: 'devbox' });
    expect(pass).toMatchObject({ created: ['devbox-1', 'devbox-2'], removed: [], replaced: [] });
    const pods = await podsOf(kube, namespace);
    expect(pods.map((pod) => pod.metadata.name)).toEqual(['devbox-1', 'devbox-2']);
    const [first] = pods;
    expect(first?.metadata.labels).toMatchObject({
      'corral.dev/vdi-pool': 'devbox',
      'corral.dev/vdi-kind': 'ct',
      'corral.dev/vdi-member': 'devbox-1',
      team: 'core',
    });
    expect(first?.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'ConfigMap',
        name: 'corral-vdi-ct-devbox',
        uid: configMap?.metadata.uid,
      }),
    ]);
    expect(first?.spec?.containers[0]).toMatchObject({
      image,
      env: [{ name: 'TEAM', value: 'core' }],
      tty: true,
    });
    const services = await kube.resource(serviceKind).in(namespace).list('corral.dev/vdi-pool=devbox');
    expect(services.map((service) => [service.metadata.name, service.spec?.clusterIP])).toEqual([
      ['devbox-1', 'None'],
      ['devbox-2', 'None'],
    ]);
    const claims = await kube.resource(pvcKind).in(namespace).list('corral.dev/vdi-pool=devbox');
    expect(claims).toHaveLength(2);
    expect(first?.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName).toMatch(/^devbox-1-home-/);

    expect(await vdi.reconcileCtPool({ name: 'devbox' })).toMatchObject({ created: [], completed: [] });
    const view = await vdi.getCtPool({ name: 'devbox' });
    expect(view.members.map((member) => [member.member, member.owner])).toEqual([
      ['devbox-1', undefined],
      ['devbox-2', undefined],
    ]);
    expect((await vdi.listCtPools()).map((pool) => pool.id)).toEqual([`ct/${namespace}/devbox`]);

    expect(await vdi.deleteCtPool({ name: 'devbox' })).toMatchObject({ deleted: ['devbox-1', 'devbox-2'] });
    await waitMembers(kube, namespace, []);
    expect(await kube.resource(serviceKind).in(namespace).list('corral.dev/vdi-pool=devbox')).toEqual([]);
    expect(await kube.resource(configMapKind).in(namespace).get('corral-vdi-ct-devbox')).toBeUndefined();
    expect((await caught(vdi.getCtPool({ name: 'devbox' }))).code).toBe('POOL_NOT_FOUND');
  });

  it('leaves members that a pass which failed half-way made, and the next pass completes them', async () => {
    class FailingCluster extends KubeCluster {
      failPod: string | undefined = 'flaky-2';
      override async createPod(namespace: string, pod: PodObject) {
        if (pod.metadata.name === this.failPod) throw new Error('the apiserver went away');
        return await super.createPod(namespace, pod);
      }
    }
    const failing = new FailingCluster(cluster().kubeConfig);
    const { namespace, vdi, ctx, kube } = await setUp('ct-half', failing);
    await vdi.applyCtPool({ spec: { name: 'flaky', image, size: 3 } });
    const { reconcileCtPool } = await import('../../../src/ct-pools/reconcile-ct-pool.js');
    await expect(reconcileCtPool(ctx, { name: 'flaky' })).rejects.toThrow(/went away/);
    expect((await podsOf(kube, namespace)).map((pod) => pod.metadata.name)).toEqual(['flaky-1']);
    expect((await kube.resource(serviceKind).in(namespace).get('flaky-2'))?.metadata.name).toBe('flaky-2');

    failing.failPod = undefined;
    const pass = await reconcileCtPool(ctx, { name: 'flaky' });
    expect(pass).toMatchObject({ completed: ['flaky-2'], created: ['flaky-3'] });
    expect((await podsOf(kube, namespace)).map((pod) => pod.metadata.name)).toEqual([
      'flaky-1',
      'flaky-2',
      'flaky-3',
    ]);
  });

  it('claims by kind, presents the claim on the Pod, and a release brings up a new Pod with a wiped home', async () => {
    const { namespace, vdi, kube } = await setUp('ct-claim');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, home: { size: '1Gi' } } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    await waitReady(kube, namespace, 'devbox-1');

    const claimed = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    expect(claimed).toMatchObject({
      id: `ct/${namespace}/devbox-1`,
      kind: 'ct',
      poolId: `ct/${namespace}/devbox`,
      owner: alice,
      phase: 'Running',
      running: true,
      ephemeral: true,
    });
    expect(claimed.startError).toBeUndefined();
    const before = await kube.resource(podKind).in(namespace).get('devbox-1');
    expect(before?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBe(alice);
    expect((await caught(vdi.claim({ pool: 'devbox', identity: bob, kind: 'ct' }))).code).toBe(
      'NO_FREE_MEMBER',
    );
    expect(await vdi.listDesktops({ identity: alice })).toEqual([
      expect.objectContaining({ id: claimed.id }),
    ]);
    expect((await vdi.renew({ member: 'devbox-1', identity: alice, kind: 'ct' })).owner).toBe(alice);
    expect((await caught(vdi.release({ member: 'devbox-1', identity: bob, kind: 'ct' }))).code).toBe(
      'NOT_HOLDER',
    );
    const homeBefore = before?.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName;

    const released = await vdi.release({ member: 'devbox-1', identity: alice, kind: 'ct' });
    expect(released).toMatchObject({ desktopId: claimed.id, reset: 'recreated' });
    const after = await kube.resource(podKind).in(namespace).get('devbox-1');
    expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(after?.metadata.annotations?.['corral.dev/vdi-assigned-to']).toBeUndefined();
    const homeAfter = after?.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName;
    expect(homeAfter).toMatch(/^devbox-1-home-/);
    expect(homeAfter).not.toBe(homeBefore);
    const live = (await kube.resource(pvcKind).in(namespace).list('corral.dev/vdi-member=devbox-1')).filter(
      (claim) => !claim.metadata.deletionTimestamp,
    );
    expect(live.map((claim) => claim.metadata.name)).toEqual([homeAfter]);
    expect((vdi.audit as MemoryAuditSink).list().map((record) => [record.action, record.target])).toEqual(
      expect.arrayContaining([
        ['vdi claim', claimed.id],
        ['vdi release', claimed.id],
      ]),
    );
    expect((await vdi.claim({ pool: 'devbox', identity: bob, kind: 'ct' })).member).toBe('devbox-1');
  });

  it('keeps the home volume on release when the spec says keep', async () => {
    const { namespace, vdi, kube } = await setUp('ct-keep');
    await vdi.applyCtPool({
      spec: { name: 'devbox', image, size: 1, home: { size: '1Gi', onRelease: 'keep' } },
    });
    await vdi.reconcileCtPool({ name: 'devbox' });
    await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    const before = await kube.resource(podKind).in(namespace).get('devbox-1');
    await vdi.release({ member: 'devbox-1', identity: alice, kind: 'ct' });
    const after = await kube.resource(podKind).in(namespace).get('devbox-1');
    expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(after?.spec?.volumes).toEqual(before?.spec?.volumes);
  });

  it('shrinks by free members only, taking each Lease first, and never touches a held member', async () => {
    const { namespace, vdi, kube } = await setUp('ct-shrink');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 3 } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    await vdi.assign({ pool: 'devbox', identity: alice, kind: 'ct' });
    const held = await kube.resource(podKind).in(namespace).get('devbox-1');

    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
    const pass = await vdi.reconcileCtPool({ name: 'devbox' });
    expect(pass).toMatchObject({ removed: ['devbox-2', 'devbox-3'], held: ['devbox-1'], replaced: [] });
    await waitMembers(kube, namespace, ['devbox-1']);
    expect((await kube.resource(podKind).in(namespace).get('devbox-1'))?.metadata.uid).toBe(
      held?.metadata.uid,
    );
    expect((await kube.listLeases(namespace)).map((lease) => lease.spec.holderIdentity)).toEqual([alice]);

    expect((await caught(vdi.deleteCtPool({ name: 'devbox' }))).code).toBe('POOL_IN_USE');
    expect(await podsOf(kube, namespace)).toHaveLength(1);
    expect(await vdi.deleteCtPool({ name: 'devbox', force: true })).toMatchObject({ forced: true });
    await waitMembers(kube, namespace, []);
    expect(await kube.listLeases(namespace)).toEqual([]);
  });

  it('replaces a free member whose container ended with a new Pod from the image', async () => {
    const { namespace, vdi, kube } = await setUp('ct-replace');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, command: ['sh', '-c', 'exit 3'] } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    const before = await waitFor(() => kube.resource(podKind).in(namespace).get('devbox-1'), {
      describe: 'the container of devbox-1 to end',
      until: (pod) => pod?.status?.phase === 'Failed',
    });
    const stopped = await caught(
      createCtBackend(vdi.context).gatherConnectFacts({ namespace, member: 'devbox-1' }),
    );
    expect([stopped.code, stopped.message]).toEqual(['DESKTOP_STOPPED', expect.stringMatching(/Failed/)]);
    expect(await vdi.reconcileCtPool({ name: 'devbox' })).toMatchObject({ replaced: ['devbox-1'] });
    const after = await kube.resource(podKind).in(namespace).get('devbox-1');
    expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(await kube.listLeases(namespace)).toEqual([]);
  });

  it('rolls an image change to the free members, maxUnavailable at once, and to a claimed member only at its release', async () => {
    const { namespace, vdi, kube } = await setUp('ct-image');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 3 } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    const { member: claimed } = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    const free = ['devbox-1', 'devbox-2', 'devbox-3'].filter((member) => member !== claimed);
    const held = await kube.resource(podKind).in(namespace).get(claimed);
    const imageOf = async (member: string) =>
      (await kube.resource(podKind).in(namespace).get(member))?.spec?.containers[0]?.image;

    const next = 'ghcr.io/acme/devbox:1.5';
    await vdi.applyCtPool({ spec: { name: 'devbox', image: next, size: 3, maxUnavailable: 2 } });
    expect(await vdi.reconcileCtPool({ name: 'devbox' })).toMatchObject({ replaced: free, held: [claimed] });
    expect(await Promise.all(free.map(imageOf))).toEqual([next, next]);
    for (const member of free) await waitReady(kube, namespace, member);
    const still = await kube.resource(podKind).in(namespace).get(claimed);
    expect([still?.metadata.uid, still?.spec?.containers[0]?.image]).toEqual([held?.metadata.uid, image]);
    expect(await vdi.reconcileCtPool({ name: 'devbox' })).toMatchObject({ replaced: [], held: [claimed] });

    await vdi.release({ member: claimed, identity: alice, kind: 'ct' });
    expect(await imageOf(claimed)).toBe(next);
    expect(await vdi.reconcileCtPool({ name: 'devbox' })).toMatchObject({ replaced: [], held: [] });
  });

  it('admits extended resources before it makes anything', async () => {
    const { namespace, vdi, kube } = await setUp('ct-gpu');
    await vdi.applyCtPool({
      spec: { name: 'gpus', image, size: 2, resources: { limits: { 'example.com/no-such-gpu': '1' } } },
    });
    const refused = await caught(vdi.reconcileCtPool({ name: 'gpus' }));
    expect(refused.code).toBe('INSUFFICIENT_CAPACITY');
    expect(refused.details).toMatchObject({ pool: 'gpus', size: 2, shortfall: 2 });
    expect(await podsOf(kube, namespace)).toEqual([]);
    expect(await kube.resource(serviceKind).in(namespace).list('corral.dev/vdi-pool=gpus')).toEqual([]);
  });

  it('offers the terminal of a Ready member, and refuses stop and USB with what to do instead', async () => {
    const { namespace, vdi, kube } = await setUp('ct-backend');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1 } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    const cts = vdi.context.backends.ct;
    if (!cts) throw new Error('the SDK registers a ct backend');
    const ref = { namespace, member: 'devbox-1' };
    await waitReady(kube, namespace, 'devbox-1');
    const facts = await cts.gatherConnectFacts(ref);
    expect(facts).toEqual({ kind: 'ct', namespace, pod: 'devbox-1', shell: '/bin/sh' });
    const plan = planConnect(facts);
    expect(plan).toMatchObject({ kind: 'connect', target: { protocol: 'terminal' } });
    expect(JSON.stringify(plan)).toMatch(/rdp/);
    expect(await cts.startMember(ref)).toBe('already');
    const stop = await caught(cts.stopMember(ref));
    expect([stop.code, stop.message]).toEqual([
      'UNSUPPORTED_BACKEND',
      expect.stringMatching(/release it instead/),
    ]);
    expect(await cts.checkUsbSupport(ref)).toMatchObject({
      kind: 'unsupported',
      reason: expect.stringMatching(/VM pool/),
    });
    expect(await cts.readMember({ namespace, member: 'devbox-9' })).toBeUndefined();

    await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    const notHolder = await caught(vdi.openTerminal(`ct/${namespace}/devbox-1`, { identity: bob }));
    expect(notHolder.code).toBe('NOT_HOLDER');
    const vm = await caught(vdi.openTerminal(`vm/${namespace}/devbox-1`, { identity: alice }));
    expect(vm.code).toBe('UNSUPPORTED_BACKEND');
  });

  it('opens a shell in the claimed member through pods/exec: it runs commands, resizes and ends with the exit code', async () => {
    const { namespace, vdi, kube } = await setUp('ct-terminal');
    await vdi.applyCtPool({ spec: { name: 'devbox', image, size: 1, shell: '/bin/sh' } });
    await vdi.reconcileCtPool({ name: 'devbox' });
    await waitReady(kube, namespace, 'devbox-1');

    const claimedAt = performance.now();
    const desktop = await vdi.claim({ pool: 'devbox', identity: alice, kind: 'ct' });
    const terminal = await vdi.openTerminal(desktop.id, { identity: alice, columns: 100, rows: 30 });
    let output = '';
    terminal.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    terminal.write('echo "host=$HOSTNAME"\n');
    await waitFor(() => output.includes('host=devbox-1'), {
      describe: `the shell to print its host name (saw ${JSON.stringify(output)})`,
    });
    const readyMs = performance.now() - claimedAt;
    terminal.resize({ columns: 132, rows: 43 });
    // the resize reaches the terminal on its own channel, so ask again until the shell sees it
    await waitFor(
      () => {
        if (output.includes('43 132')) return true;
        terminal.write('stty size\n');
        return false;
      },
      { describe: `the shell to see the new size (saw ${JSON.stringify(output.slice(-200))})` },
    );
    terminal.write('exit 7\n');
    expect(await terminal.exitCode).toBe(7);

    // without a terminal, the end of the stream's input is the shell's: it runs what it read, then exits
    const script = await vdi.openTerminal(desktop.id, { identity: alice, tty: false });
    let printed = '';
    script.on('data', (chunk: Buffer) => {
      printed += chunk.toString('utf8');
    });
    const closed = new Promise<void>((resolve) => script.on('close', resolve));
    script.end('echo "piped into $HOSTNAME"; echo to-stderr >&2\n');
    expect(await script.exitCode).toBe(0);
    await closed;
    expect(printed).toContain('piped into devbox-1\n');
    expect(printed).toContain('to-stderr\n');

    const releasedAt = performance.now();
    await vdi.release({ member: 'devbox-1', identity: alice, kind: 'ct' });
    await waitReady(kube, namespace, 'devbox-1');
    const replacementMs = performance.now() - releasedAt;
    console.info(
      `claim to a ready terminal: ${Math.round(readyMs)} ms; release to a ready replacement: ${Math.round(replacementMs)} ms`,
    );
  });
});
