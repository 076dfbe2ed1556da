import { describe, expect, it } from 'vitest';
import { isVdiError, type VdiError } from '../../../src/errors.js';
import { KubeCluster } from '../../../src/kube/cluster.js';
import { type ObjectStore, readModifyWrite } from '../../../src/kube/read-modify-write.js';
import type { ResourceKind } from '../../../src/kube/resource.js';
import { configMapKind, leaseKind, podKind } from '../../../src/kube/resource-kinds.js';
import type { ConfigMapObject, ObjectMeta } from '../../../src/kube-objects.js';
import { createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const cluster = useSharedCluster();

async function failureOf(promise: Promise<unknown>): Promise<VdiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isVdiError(error)) throw new Error(`expected a VdiError, got ${String(error)}`);
  return error;
}

async function setUp(prefix: string) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const kube = new KubeCluster(cluster().kubeConfig);
  return { namespace, kube, configMaps: kube.resource(configMapKind).in(namespace) };
}

const settings = (name: string, data: Record<string, string>): ConfigMapObject => ({
  metadata: { name },
  data,
});

interface EndpointSliceObject {
  metadata: ObjectMeta;
  addressType: string;
  endpoints?: Array<{ addresses: string[] }>;
}

// the descriptor docs/kube-adapter.md shows for a kind the SDK does not use itself
const endpointSliceKind: ResourceKind<EndpointSliceObject> = {
  kind: 'EndpointSlice',
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  namespaced: true,
};

describe('the typed resource accessor against a real apiserver', () => {
  it('serves a kind it was given only as a descriptor: create, get, list by label, delete', async () => {
    const { namespace, kube } = await setUp('new-kind');
    const slices = kube.resource(endpointSliceKind).in(namespace);
    const created = await slices.create({
      metadata: { name: 'desk', labels: { app: 'desk' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.7'] }],
    });
    expect(created.metadata.uid).toBeDefined();
    expect((await slices.get('desk'))?.endpoints).toMatchObject([{ addresses: ['10.0.0.7'] }]);
    expect((await slices.list('app=desk')).map((slice) => slice.metadata.name)).toEqual(['desk']);
    expect(await slices.list('app=other')).toEqual([]);
    expect(await slices.delete('desk', { preconditions: { uid: created.metadata.uid ?? '' } })).toBe(true);
    expect(await slices.get('desk')).toBeUndefined();
    expect(await slices.delete('desk', { preconditions: {} })).toBe(false);
  });

  it('pages any kind: every object once, in pages of the limit asked', async () => {
    const { configMaps } = await setUp('pages');
    for (const index of [1, 2, 3, 4, 5])
      await configMaps.create({ metadata: { name: `page-${index}`, labels: { paged: 'yes' } } });
    const seen: string[][] = [];
    let next: string | undefined;
    do {
      const page = await configMaps.listPage('paged=yes', { limit: 2, ...(next ? { continue: next } : {}) });
      seen.push(page.items.map((item) => item.metadata.name ?? ''));
      next = page.continue;
    } while (next !== undefined);
    expect(seen).toEqual([['page-1', 'page-2'], ['page-3', 'page-4'], ['page-5']]);
    const listed = await configMaps.listToWatch('paged=yes');
    expect(listed.items).toHaveLength(5);
    expect(listed.resourceVersion).toMatch(/^[0-9]+$/);
  });

  it('refuses a replace of a Lease that carries no resourceVersion, and changes nothing', async () => {
    const { namespace, kube } = await setUp('unversioned');
    const lease = await kube.createLease(namespace, {
      metadata: { name: 'held' },
      spec: { holderIdentity: 'alice' },
    });
    const { resourceVersion: _, ...metadata } = lease.metadata;
    const refused = await failureOf(
      kube.replaceLease(namespace, { metadata, spec: { ...lease.spec, holderIdentity: 'mallory' } }),
    );
    expect(refused.code).toBe('INVALID_INPUT');
    expect(refused.message).toMatch(/carries no metadata\.resourceVersion/);
    expect((await kube.getLease(namespace, 'held'))?.spec.holderIdentity).toBe('alice');
  });

  it('patches with a lock only while the object is at that resourceVersion', async () => {
    const { configMaps } = await setUp('lock');
    const first = await configMaps.create(settings('locked', { mode: 'a' }));
    await configMaps.patch('locked', { data: { mode: 'b' } });
    const stale = await failureOf(
      configMaps.patch('locked', { data: { mode: 'c' } }, { lock: first.metadata.resourceVersion ?? '' }),
    );
    expect(isVdiError(stale, 'CONFLICT')).toBe(true);
    const current = await configMaps.get('locked');
    expect(current?.data).toEqual({ mode: 'b' });
    const locked = await configMaps.patch(
      'locked',
      { data: { mode: 'c' } },
      { lock: current?.metadata.resourceVersion ?? '' },
    );
    expect(locked.data).toEqual({ mode: 'c' });
  });

  it('deletes only while the preconditions hold', async () => {
    const { configMaps } = await setUp('preconditions');
    const created = await configMaps.create(settings('kept', { mode: 'a' }));
    await configMaps.patch('kept', { data: { mode: 'b' } });
    const refused = await failureOf(
      configMaps.delete('kept', {
        preconditions: { resourceVersion: created.metadata.resourceVersion ?? '' },
      }),
    );
    expect(isVdiError(refused, 'CONFLICT')).toBe(true);
    expect(await configMaps.get('kept')).toBeDefined();
  });

  it('creates as a dry run: admitted and defaulted by the apiserver, stored nowhere, refused fields named', async () => {
    const { configMaps } = await setUp('dry-run');
    const checked = await configMaps.create(settings('desk', { size: '2' }), { dryRun: true });
    expect(checked.metadata.creationTimestamp).toBeDefined();
    expect(await configMaps.get('desk')).toBeUndefined();
    const refused = await failureOf(
      configMaps.create(settings('Not A Name', { size: '2' }), { dryRun: true }),
    );
    expect(refused.code).toBe('INVALID_INPUT');
    expect(await configMaps.list()).toEqual([]);
  });

  it('types each subresource on its kind', () => {
    const kube = new KubeCluster(cluster().kubeConfig);
    // a Pod has exec and no stop: asking for one does not compile
    // @ts-expect-error 'stop' is no subresource of a Pod
    void kube.resource(podKind).in('default').subresourcePath('desk', 'stop');
    expect(kube.resource(podKind).kind.subresources).toEqual(['exec']);
  });
});

describe('readModifyWrite against a real apiserver', () => {
  /** The store, with `before` run once just before its next replace: another writer's change in between. */
  function racing<K extends { metadata: ObjectMeta }>(store: ObjectStore<K>, before: () => Promise<unknown>) {
    let pending: (() => Promise<unknown>) | undefined = before;
    let replaces = 0;
    const raced: ObjectStore<K> & { replaces: () => number } = {
      get: (name) => store.get(name),
      create: (object) => store.create(object),
      replace: async (object) => {
        replaces += 1;
        const run = pending;
        pending = undefined;
        await run?.();
        return await store.replace(object);
      },
      replaces: () => replaces,
    };
    return raced;
  }

  it('creates the object when there is none, and writes nothing when modify has nothing to write', async () => {
    const { configMaps } = await setUp('rmw-create');
    const created = await readModifyWrite(configMaps, 'fresh', (current) =>
      current ? undefined : settings('fresh', { mode: 'a' }),
    );
    expect(created.kind).toBe('written');
    const again = await readModifyWrite(configMaps, 'fresh', (current) =>
      current ? undefined : settings('fresh', { mode: 'b' }),
    );
    expect(again).toMatchObject({ kind: 'unchanged', current: { data: { mode: 'a' } } });
  });

  it('reads again after a write made between its read and its commit, and keeps both changes', async () => {
    const { configMaps } = await setUp('rmw-race');
    await configMaps.create(settings('shared', { a: '1' }));
    const store = racing(configMaps, () => configMaps.patch('shared', { data: { b: '2' } }));
    const seen: Array<Record<string, string> | undefined> = [];
    const result = await readModifyWrite(store, 'shared', (current) => {
      seen.push(current?.data);
      return current && { ...current, data: { ...current.data, c: '3' } };
    });
    expect(seen).toEqual([{ a: '1' }, { a: '1', b: '2' }]);
    expect(store.replaces()).toBe(2);
    expect(result.kind === 'written' && result.object.data).toEqual({ a: '1', b: '2', c: '3' });
  });

  it('commits with the version read, not the one the new object carries', async () => {
    const { namespace, kube } = await setUp('rmw-version');
    const lease = await kube.createLease(namespace, {
      metadata: { name: 'marks' },
      spec: { holderIdentity: 'alice' },
    });
    await kube.replaceLease(namespace, { ...lease, spec: { ...lease.spec, leaseDurationSeconds: 30 } });
    // `modify` returns an object built on the first read: its stale version must not decide the write
    const result = await readModifyWrite(kube.resource(leaseKind).in(namespace), 'marks', (current) =>
      current?.spec.renewTime
        ? undefined
        : { ...lease, spec: { ...current?.spec, renewTime: '2026-01-01T00:00:00Z' } },
    );
    expect(result.kind).toBe('written');
    expect((await kube.getLease(namespace, 'marks'))?.spec).toMatchObject({
      holderIdentity: 'alice',
      leaseDurationSeconds: 30,
    });
  });

  it('gives up with CONFLICT once every try met another write', async () => {
    const { configMaps } = await setUp('rmw-give-up');
    await configMaps.create(settings('busy', { n: '0' }));
    let writes = 0;
    const busy: ObjectStore<ConfigMapObject> = {
      get: (name) => configMaps.get(name),
      create: (object) => configMaps.create(object),
      replace: async (object) => {
        writes += 1;
        await configMaps.patch('busy', { data: { n: String(writes) } });
        return await configMaps.replace(object);
      },
    };
    const refused = await failureOf(
      readModifyWrite(busy, 'busy', (current) => current && { ...current, data: { n: 'mine' } }, {
        attempts: 3,
      }),
    );
    expect(isVdiError(refused, 'CONFLICT')).toBe(true);
    expect(writes).toBe(3);
    expect((await configMaps.get('busy'))?.data).toEqual({ n: '3' });
  });
});
