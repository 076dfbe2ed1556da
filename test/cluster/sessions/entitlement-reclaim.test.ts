import { describe, expect, it } from 'vitest';
import { MemoryAuditSink } from '../../../src/audit.js';
import type { DesktopKind } from '../../../src/desktop-backend.js';
import { VdiError } from '../../../src/errors.js';
import type { VdiEvents } from '../../../src/events.js';
import { holderGroupsAnnotation, notEntitledAtAnnotation } from '../../../src/keys.js';
import { podKind } from '../../../src/kube/resource-kinds.js';
import { setPoolSettings } from '../../../src/pools/set-pool-settings.js';
import { createSessionEngine } from '../../../src/sessions/session-engine.js';
import { createTestClock } from '../../../src/testing/test-clock.js';
import { waitFor } from '../../../src/testing/wait-for.js';
import { createVdi, type Vdi } from '../../../src/vdi.js';
import { createPoolMembers, createTestNamespace, useSharedCluster } from '../../support/cluster.js';

const minute = 60_000;
const grace = 15 * minute;
const alice = 'alice@example.com';
const cluster = useSharedCluster();

/**
 * A pool of two members that lets in the group ml: alice claims one through a front end that names her groups (ml),
 * and an admin assigns the other to dave, who is in no group.
 */
async function setUp(prefix: string, kind: DesktopKind) {
  const namespace = await createTestNamespace(cluster(), prefix);
  const clock = createTestClock();
  const audit = new MemoryAuditSink();
  const vdi = createVdi({ kubeConfig: cluster().kubeConfig, namespace, clock, audit });
  const pool = kind === 'vm' ? 'gpu' : 'devbox';
  if (kind === 'vm') {
    await createPoolMembers(cluster(), namespace, pool, 2);
    await setPoolSettings(vdi.context, { name: pool, allowedGroups: ['ml'] });
  } else {
    await vdi.applyCtPool({
      spec: { name: pool, image: 'ghcr.io/acme/devbox:1.4', size: 2, allowedGroups: ['ml'] },
    });
    await vdi.reconcileCtPool({ name: pool });
    for (const name of ['devbox-1', 'devbox-2']) {
      await waitFor(() => vdi.context.cluster.resource(podKind).in(namespace).get(name), {
        describe: `Pod ${namespace}/${name} to be Ready`,
        until: (pod) =>
          pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
      });
    }
  }
  const claimed = await vdi.claim({ pool, identity: alice, groups: ['ml', 'devs'], kind });
  const assigned = await vdi.assign({ pool, identity: 'dave', actor: 'admin@example.com', kind });
  const events: Array<VdiEvents['not-entitled'][0]> = [];
  vdi.events.on('not-entitled', (event) => events.push(event));
  const engine = (options: { fence?: () => Promise<void> } = {}) =>
    createSessionEngine(vdi.context, {
      namespaces: [namespace],
      policy: { disconnectGraceMs: grace },
      ...options,
    });
  // the pool stops letting ml in
  const revoke = (allowedGroups: string[]) =>
    kind === 'vm'
      ? setPoolSettings(vdi.context, { name: pool, allowedGroups })
      : vdi.applyCtPool({
          spec: { name: pool, image: 'ghcr.io/acme/devbox:1.4', size: 2, allowedGroups },
        });
  return {
    namespace,
    vdi,
    clock,
    audit,
    events,
    engine,
    revoke,
    kind,
    claimed: claimed.member,
    assigned: assigned.member,
  };
}

const leaseOf = (vdi: Vdi, namespace: string, member: string) =>
  vdi.context.cluster.getLease(namespace, `corral-vdi-${member}`);

describe.each<DesktopKind>(['vm', 'ct'])(
  'the reclaim of a %s desktop whose pool no longer lets its holder in',
  (kind) => {
    it('records the groups a claim was let in with, and an assign as unchecked', async () => {
      const { vdi, namespace, claimed, assigned } = await setUp(`not-entitled-record-${kind}`, kind);
      expect((await leaseOf(vdi, namespace, claimed))?.metadata.annotations?.[holderGroupsAnnotation]).toBe(
        '["devs","ml"]',
      );
      expect((await leaseOf(vdi, namespace, assigned))?.metadata.annotations?.[holderGroupsAnnotation]).toBe(
        'unchecked',
      );
    });

    it('marks the claim at once, reclaims it once the grace since the mark has passed, and leaves the assigned one', async () => {
      const setup = await setUp(`not-entitled-reclaim-${kind}`, kind);
      const { vdi, namespace, clock, audit, claimed, assigned } = setup;
      const engine = setup.engine();
      await setup.revoke(['research']);
      expect(await engine.runPass()).toMatchObject({ notEntitled: 1, reclaimed: 0, errors: [] });
      const markedAt = clock.now();
      expect((await leaseOf(vdi, namespace, claimed))?.metadata.annotations?.[notEntitledAtAnnotation]).toBe(
        markedAt.toISOString(),
      );
      expect(setup.events).toEqual([
        {
          desktopId: `${kind}/${namespace}/${claimed}`,
          holder: alice,
          reclaimAt: new Date(markedAt.getTime() + grace).toISOString(),
        },
      ]);
      // a second pass keeps the mark's time: the grace runs from the first sight
      clock.advance(grace - minute);
      expect(await engine.runPass()).toMatchObject({ notEntitled: 0, reclaimed: 0, errors: [] });
      clock.advance(minute);
      expect(await engine.runPass()).toMatchObject({ reclaimed: 1, failed: 0, errors: [] });
      expect(await leaseOf(vdi, namespace, claimed)).toBeUndefined();
      expect(audit.list().map((record) => [record.action, record.user, record.target])).toContainEqual([
        'vdi reclaim (not-entitled)',
        'corral-vdi/broker',
        `${kind}/${namespace}/${claimed} (holder ${alice})`,
      ]);
      expect((await leaseOf(vdi, namespace, assigned))?.spec.holderIdentity).toBe('dave');
    });

    it('clears the mark when the pool lets the holder in again, and does not reclaim', async () => {
      const setup = await setUp(`not-entitled-again-${kind}`, kind);
      const { vdi, namespace, clock, claimed } = setup;
      const engine = setup.engine();
      await setup.revoke(['research']);
      expect(await engine.runPass()).toMatchObject({ notEntitled: 1 });
      clock.advance(minute);
      await setup.revoke(['research', 'devs']);
      expect(await engine.runPass()).toMatchObject({ entitledAgain: 1, errors: [] });
      expect(
        (await leaseOf(vdi, namespace, claimed))?.metadata.annotations?.[notEntitledAtAnnotation],
      ).toBeUndefined();
      clock.advance(grace);
      expect(await engine.runPass()).toMatchObject({ reclaimed: 0, notEntitled: 0, errors: [] });
      expect((await leaseOf(vdi, namespace, claimed))?.spec.holderIdentity).toBe(alice);
    });

    it('reclaims after a crash between the mark and the reclaim: a new engine finds the mark and keeps its time', async () => {
      const setup = await setUp(`not-entitled-crash-${kind}`, kind);
      const { vdi, namespace, clock, claimed } = setup;
      await setup.revoke(['research']);
      // the first engine marks, then its process is gone before the grace runs out
      expect(await setup.engine().runPass()).toMatchObject({ notEntitled: 1 });
      clock.advance(grace);
      const restarted = setup.engine();
      expect(await restarted.runPass()).toMatchObject({ notEntitled: 0, reclaimed: 1, errors: [] });
      expect(await leaseOf(vdi, namespace, claimed)).toBeUndefined();
    });

    it('writes no mark from a replica that no longer leads: its fence refuses before the write', async () => {
      const setup = await setUp(`not-entitled-fenced-${kind}`, kind);
      const { vdi, namespace, claimed } = setup;
      await setup.revoke(['research']);
      const notLeader = new VdiError('NOT_LEADER', 'another replica leads now');
      const result = await setup.engine({ fence: () => Promise.reject(notLeader) }).runPass();
      expect(result).toMatchObject({ notEntitled: 0, reclaimed: 0 });
      expect(result.errors.map((error) => error.code)).toEqual(['NOT_LEADER']);
      expect(
        (await leaseOf(vdi, namespace, claimed))?.metadata.annotations?.[notEntitledAtAnnotation],
      ).toBeUndefined();
    });
  },
);
