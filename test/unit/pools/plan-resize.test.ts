import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { planMemberRemoval, planResize } from '../../../src/pools/plan-resize.js';
import { describePools, type PoolView } from '../../../src/pools/pool-view.js';

const now = new Date('2026-07-02T12:00:00Z');

function vm(name: string, extra: { source?: string | null; ephemeral?: boolean; assigned?: string } = {}) {
  const source = extra.source === undefined ? 'golden' : extra.source;
  return {
    metadata: {
      name,
      labels: {
        'corral.dev/vdi-pool': 'devpool',
        ...(extra.ephemeral ? { 'corral.dev/vdi-ephemeral': 'true' } : {}),
        ...(extra.assigned ? { 'corral.dev/vdi-assigned-to': extra.assigned } : {}),
      },
      ...(source === null ? {} : { annotations: { 'corral.dev/vdi-source': source } }),
    },
    spec: { runStrategy: 'Halted' },
    status: { printableStatus: 'Stopped' },
  } satisfies VirtualMachine;
}

function lease(member: string, holder: string, renewTime = '2026-07-02T11:59:00.000000Z'): LeaseObject {
  return {
    metadata: { name: `corral-vdi-${member}`, resourceVersion: '7' },
    spec: {
      holderIdentity: holder,
      acquireTime: '2026-07-02T11:30:00.000000Z',
      renewTime,
      leaseDurationSeconds: 3600,
    },
  };
}

function poolOf(vms: VirtualMachine[], leases: LeaseObject[] = []): PoolView {
  return describePools({ namespace: 'ns', vms, leases, now })[0] as PoolView;
}

const members = (count: number) => Array.from({ length: count }, (_, index) => vm(`devpool-${index + 1}`));
const claimedPool = (claimed: string[], size = 5) =>
  poolOf(
    members(size),
    claimed.map((name) => lease(name, 'alice')),
  );

describe('planResize', () => {
  it('leaves a pool of the asked size alone', () => {
    expect(planResize({ pool: claimedPool([]), size: 5, taken: new Set() })).toEqual({
      kind: 'unchanged',
      size: 5,
    });
  });

  it('grows into the next free indices, skipping names other VMs hold, from the golden VM the members record', () => {
    expect(planResize({ pool: claimedPool([]), size: 8, taken: new Set(['devpool-6']) })).toEqual({
      kind: 'grow',
      from: 5,
      size: 8,
      add: ['devpool-7', 'devpool-8', 'devpool-9'],
      source: 'golden',
      ephemeral: false,
    });
  });

  it('counts a member a release is recreating as a member, and never takes its name', () => {
    const pool = poolOf([vm('devpool-2', { ephemeral: true })]);
    expect(planResize({ pool, size: 3, taken: new Set(), resetting: ['devpool-1'] })).toMatchObject({
      kind: 'grow',
      from: 2,
      add: ['devpool-3'],
    });
    expect(planResize({ pool, size: 1, taken: new Set(), resetting: ['devpool-1'] })).toMatchObject({
      kind: 'shrink',
      remove: ['devpool-2'],
    });
    expect(
      planResize({ pool, size: 1, taken: new Set(), resetting: ['devpool-1', 'devpool-3'] }),
    ).toMatchObject({ kind: 'reject', code: 'POOL_IN_USE', smallest: 2, busy: ['devpool-1', 'devpool-3'] });
  });

  it('shrinks by the free members with the highest indices, never a claimed one', () => {
    expect(planResize({ pool: claimedPool(['devpool-5', 'devpool-3']), size: 3, taken: new Set() })).toEqual({
      kind: 'shrink',
      from: 5,
      size: 3,
      remove: ['devpool-4', 'devpool-2'],
    });
  });

  it('refuses to shrink below the claimed members and says how far it can go', () => {
    const plan = planResize({
      pool: claimedPool(['devpool-1', 'devpool-2', 'devpool-5']),
      size: 1,
      taken: new Set(),
    });
    expect(plan).toMatchObject({
      kind: 'reject',
      code: 'POOL_IN_USE',
      smallest: 3,
      busy: ['devpool-1', 'devpool-2', 'devpool-5'],
    });
    expect(plan.kind === 'reject' && plan.message).toMatch(/can shrink to 3 at the least, not 1/);
  });

  it.each([
    ['a live claim', [vm('devpool-1'), vm('devpool-2')], [lease('devpool-2', 'bob')], ['devpool-1']],
    ['a v0.6.0 assignment', [vm('devpool-1'), vm('devpool-2', { assigned: 'bob' })], [], ['devpool-1']],
    [
      'an expired claim, which binds nobody',
      [vm('devpool-1'), vm('devpool-2')],
      [lease('devpool-2', 'bob', '2026-07-02T10:00:00.000000Z')],
      ['devpool-2'],
    ],
  ])('shrinking a pool with %s removes only members nobody holds', (_, vms, leases, remove) => {
    expect(planResize({ pool: poolOf(vms, leases), size: 1, taken: new Set() })).toMatchObject({
      kind: 'shrink',
      remove,
    });
  });

  it.each([
    [
      'the members name two golden VMs',
      [vm('devpool-1'), vm('devpool-2', { source: 'other' })],
      'golden, other',
    ],
    ['a member records none', [vm('devpool-1'), vm('devpool-2', { source: null })], 'golden'],
    ['no member records one', [vm('devpool-1', { source: null })], 'none recorded'],
  ])('refuses to grow when %s and the caller names none', (_, vms, named) => {
    const plan = planResize({ pool: poolOf(vms), size: 4, taken: new Set() });
    expect(plan).toMatchObject({ kind: 'reject', code: 'INVALID_INPUT' });
    expect(plan.kind === 'reject' && plan.message).toContain(`(${named})`);
  });

  it('grows from the golden VM the caller names, and keeps an ephemeral pool ephemeral', () => {
    const pool = poolOf([vm('devpool-1', { source: null, ephemeral: true })]);
    expect(planResize({ pool, size: 2, taken: new Set(), source: 'golden-2' })).toMatchObject({
      kind: 'grow',
      add: ['devpool-2'],
      source: 'golden-2',
      ephemeral: true,
    });
  });

  it('never removes a held member, never takes a taken name, and lands on the size it plans', () => {
    const input = fc.record({
      count: fc.integer({ min: 1, max: 12 }),
      claimed: fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
      taken: fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 8 }),
      size: fc.integer({ min: 1, max: 20 }),
    });
    fc.assert(
      fc.property(input, ({ count, claimed, taken, size }) => {
        const held = members(count)
          .map((member) => member.metadata.name)
          .filter((_, index) => claimed[index]);
        const pool = poolOf(
          members(count),
          held.map((name) => lease(name, 'alice')),
        );
        const takenNames = new Set(taken.map((index) => `devpool-${index}`));
        const plan = planResize({ pool, size, taken: takenNames });
        switch (plan.kind) {
          case 'unchanged':
            expect(size).toBe(count);
            break;
          case 'grow':
            expect(plan.add).toHaveLength(size - count);
            expect(new Set(plan.add).size).toBe(plan.add.length);
            for (const name of plan.add) {
              expect(takenNames.has(name)).toBe(false);
              expect(pool.members.some((member) => member.name === name)).toBe(false);
            }
            break;
          case 'shrink':
            expect(plan.remove).toHaveLength(count - size);
            for (const name of plan.remove) expect(held).not.toContain(name);
            break;
          case 'reject':
            expect(plan.code).toBe('POOL_IN_USE');
            if (plan.code === 'POOL_IN_USE') expect(plan.smallest).toBe(held.length);
            expect(count - held.length).toBeLessThan(count - size);
        }
      }),
    );
  });
});

describe('a member a removal holds', () => {
  it('counts as free for a shrink, which removes it once it runs out of other free members', () => {
    const pool = poolOf(
      [vm('devpool-1'), vm('devpool-2'), vm('devpool-3')],
      [lease('devpool-1', 'corral-vdi/resize'), lease('devpool-3', 'bob')],
    );
    expect(pool.counts).toMatchObject({ free: 2, claimed: 1 });
    expect(planResize({ pool, size: 2, taken: new Set() })).toMatchObject({
      kind: 'shrink',
      remove: ['devpool-2'],
    });
    expect(planResize({ pool, size: 1, taken: new Set() })).toMatchObject({
      kind: 'shrink',
      remove: ['devpool-2', 'devpool-1'],
    });
  });
});

describe('planMemberRemoval', () => {
  it.each([
    ['no Lease', undefined, 'remove'],
    ['a Lease that expired', lease('devpool-1', 'bob', '2026-07-02T10:00:00.000000Z'), 'remove'],
    ['a Lease that names no holder', { ...lease('devpool-1', ''), spec: {} }, 'remove'],
    ['a live Lease that landed since the read', lease('devpool-1', 'bob'), 'skip'],
    ['a Lease a removal holds, perhaps one that died', lease('devpool-1', 'corral-vdi/resize'), 'remove'],
  ])('with %s, a member chosen for removal is to %s', (_, found, kind) => {
    expect(planMemberRemoval({ vm: vm('devpool-1'), lease: found, now })).toEqual({ kind });
  });
});
