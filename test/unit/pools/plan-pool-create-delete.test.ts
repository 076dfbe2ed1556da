import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planPoolCreate } from '../../../src/pools/plan-pool-create.js';
import { planPoolDelete } from '../../../src/pools/plan-pool-delete.js';
import type { MemberState, PoolMemberView } from '../../../src/pools/pool-view.js';

function view(name: string, state: MemberState): PoolMemberView {
  return { name, desktopId: `vm/ns/${name}`, state, power: 'Stopped', ephemeral: false };
}

describe('planPoolCreate', () => {
  const base = { namespace: 'ns', pool: 'devpool', size: 3, existing: [], taken: new Set<string>() };

  it('names the members 1 to size', () => {
    expect(planPoolCreate(base)).toEqual({
      kind: 'create',
      members: ['devpool-1', 'devpool-2', 'devpool-3'],
    });
  });

  it('refuses a pool that already has members, naming them', () => {
    const plan = planPoolCreate({ ...base, existing: ['devpool-7'] });
    expect(plan).toMatchObject({
      kind: 'reject',
      code: 'ALREADY_EXISTS',
      details: { members: ['devpool-7'] },
    });
    expect(plan.kind === 'reject' && plan.message).toContain('already exists in namespace "ns" (devpool-7)');
  });

  it.each([
    [['devpool-2'], 'The member name devpool-2 is already taken by a VM'],
    [['devpool-1', 'devpool-3', 'other'], 'The member names devpool-1, devpool-3 are already taken by VMs'],
  ])('refuses member names other objects hold (%j)', (taken, message) => {
    const plan = planPoolCreate({ ...base, taken: new Set(taken) });
    expect(plan).toMatchObject({ kind: 'reject', code: 'ALREADY_EXISTS' });
    expect(plan.kind === 'reject' && plan.message).toContain(message);
  });

  it('creates exactly when no member name is taken and the pool has no members', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { maxLength: 5 }),
        (size, indices) => {
          const taken = new Set(indices.map((index) => `devpool-${index}`));
          const plan = planPoolCreate({ ...base, size, taken });
          expect(plan.kind === 'create').toBe(indices.every((index) => index > size));
          if (plan.kind === 'create') expect(plan.members).toHaveLength(size);
        },
      ),
    );
  });
});

describe('planPoolDelete', () => {
  const free = view('devpool-1', { kind: 'free' });
  const claimed = view('devpool-2', { kind: 'claimed', holder: 'alice@example.com' });
  const legacy = view('devpool-3', { kind: 'legacy-assigned', user: 'bob' });

  it('deletes a pool nobody holds a member of', () => {
    expect(planPoolDelete({ pool: 'devpool', members: [free], force: false })).toEqual({
      kind: 'delete',
      members: ['devpool-1'],
      forced: false,
    });
  });

  it('refuses while members are claimed or assigned by v0.6.0, naming them and their holders', () => {
    const plan = planPoolDelete({ pool: 'devpool', members: [free, claimed, legacy], force: false });
    expect(plan).toMatchObject({ kind: 'reject', code: 'POOL_IN_USE', claimed: ['devpool-2', 'devpool-3'] });
    expect(plan.kind === 'reject' && plan.message).toContain(
      'devpool-2 (alice@example.com), devpool-3 (bob, v0.6.0)',
    );
  });

  it('deletes claimed members only with force, and says it was forced', () => {
    expect(planPoolDelete({ pool: 'devpool', members: [free, claimed], force: true })).toEqual({
      kind: 'delete',
      members: ['devpool-1', 'devpool-2'],
      forced: true,
    });
  });

  it('never deletes a held member without force', () => {
    const state = fc.constantFrom<MemberState>(
      { kind: 'free' },
      { kind: 'deleting' },
      { kind: 'claimed', holder: 'alice' },
      { kind: 'legacy-assigned', user: 'bob' },
    );
    fc.assert(
      fc.property(fc.array(state, { maxLength: 8 }), fc.boolean(), (states, force) => {
        const members = states.map((memberState, index) => view(`devpool-${index + 1}`, memberState));
        const held = states.some(
          (memberState) => memberState.kind === 'claimed' || memberState.kind === 'legacy-assigned',
        );
        const plan = planPoolDelete({ pool: 'devpool', members, force });
        expect(plan.kind).toBe(held && !force ? 'reject' : 'delete');
        if (plan.kind === 'delete') expect(plan.forced).toBe(held);
      }),
    );
  });
});
