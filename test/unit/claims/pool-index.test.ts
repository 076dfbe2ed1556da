import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyMemberClaim, isClaimable } from '../../../src/claims/claim-liveness.js';
import { type ClaimPlan, isGoingDown, planClaim } from '../../../src/claims/plan-claim.js';
import { PoolClaimIndex } from '../../../src/claims/pool-index.js';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { type LeaseShape, leaseOf, type MemberShape, member, now } from './member-fixtures.js';

/** A pool a test changes in place, and an index that reads it as the caches would. */
function indexedPool(pool: Array<[string, MemberShape, LeaseShape?]>) {
  const members = new Map(pool.map(([name, shape]) => [name, member(name, shape)]));
  const leases = new Map(pool.flatMap(([name, , lease]) => (lease ? [[name, leaseOf(name, lease)]] : [])));
  const index = new PoolClaimIndex({
    names: () => [...members.keys()],
    member: (name) => members.get(name),
    lease: (name) => leases.get(name),
  });
  return { members, leases, index };
}

const ask = (options: { exclude?: string[]; at?: Date; random?: () => number } = {}) => ({
  identity: 'alice',
  own: [] as LeaseObject[],
  exclude: new Set(options.exclude ?? []),
  now: options.at ?? now,
  random: options.random ?? Math.random,
});

const names = (members: readonly MemberFacts[] | undefined) => members?.map((one) => one.member).sort();

describe('PoolClaimIndex', () => {
  it('gives a claim the open members, running ones first, and passes over the held, the going and the excluded', () => {
    const { index } = indexedPool([
      ['p-1', { power: 'running' }, { holder: 'bob' }],
      ['p-2', { power: 'running' }],
      ['p-3', {}],
      ['p-4', { power: 'stopping' }],
      ['p-5', { deleting: true }],
      ['p-6', { power: 'running' }],
    ]);
    expect(names(index.excerpt(ask())?.members)).toEqual(['p-2', 'p-6']);
    expect(names(index.excerpt(ask({ exclude: ['p-6'] }))?.members)).toEqual(['p-2']);
    // no running member left to pick: the stopped open one
    expect(names(index.excerpt(ask({ exclude: ['p-2', 'p-6'] }))?.members)).toEqual(['p-3']);
    expect(index.excerpt(ask({ exclude: ['p-2', 'p-3', 'p-6'] }))).toBeUndefined();
  });

  it("adds the identity's own claims and the members that name it without a Lease", () => {
    const { index, leases } = indexedPool([
      ['p-1', {}, { holder: 'alice' }],
      ['p-2', { power: 'running', holder: 'alice' }],
      ['p-3', { label: 'bob' }],
      ['p-4', {}],
    ]);
    const excerpt = index.excerpt({ ...ask(), own: [leases.get('p-1') as LeaseObject] });
    expect(names(excerpt?.members)).toEqual(['p-1', 'p-2', 'p-4']);
    expect(excerpt?.leases.map((lease) => lease.metadata.name)).toEqual(['corral-vdi-p-1']);
  });

  it('sees a member again only once it is told of the change', () => {
    const { index, leases } = indexedPool([
      ['p-1', {}],
      ['p-2', {}, { holder: 'bob' }],
    ]);
    expect(names(index.excerpt(ask())?.members)).toEqual(['p-1']);
    leases.set('p-1', leaseOf('p-1', { holder: 'carol' }));
    leases.delete('p-2');
    expect(names(index.excerpt(ask())?.members)).toEqual(['p-1']);
    index.changed('p-1');
    index.changed('p-2');
    expect(names(index.excerpt(ask())?.members)).toEqual(['p-2']);
  });

  it('forgets a member that left the pool, and takes one that joined', () => {
    const { index, members } = indexedPool([['p-1', {}]]);
    members.delete('p-1');
    members.set('p-2', member('p-2'));
    index.changed('p-1');
    index.changed('p-2');
    expect(names(index.excerpt(ask())?.members)).toEqual(['p-2']);
  });

  it('finds a claim that expired without any change, and holds it again when the clock goes back', () => {
    const { index } = indexedPool([['p-1', {}, { holder: 'bob' }]]);
    expect(index.excerpt(ask())).toBeUndefined();
    // renewed ten minutes before `now` for an hour: it binds up to and including fifty minutes after `now`
    const expiresAt = now.getTime() + 50 * 60_000;
    expect(index.excerpt(ask({ at: new Date(expiresAt) }))).toBeUndefined();
    expect(names(index.excerpt(ask({ at: new Date(expiresAt + 1) }))?.members)).toEqual(['p-1']);
    expect(index.excerpt(ask())).toBeUndefined();
  });

  it('plans as the whole pool would: the same renewal, adoption or refusal, and a take the whole pool allows', () => {
    const identities = ['alice', 'bob', 'carol'] as const;
    const memberShape = fc.record(
      {
        power: fc.constantFrom('stopped', 'running', 'stopping', 'starting', 'provisioning'),
        holder: fc.constantFrom(...identities),
        label: fc.constantFrom(...identities),
        deleting: fc.boolean(),
      },
      { requiredKeys: ['power'] },
    );
    const leaseShape = fc.record(
      {
        holder: fc.constantFrom(...identities),
        expired: fc.boolean(),
        releasing: fc.constant('s-1'),
      },
      { requiredKeys: [] },
    );
    const poolShape = fc.array(
      fc.tuple(memberShape, fc.option(leaseShape, { nil: undefined }), fc.boolean(), fc.boolean()),
      { minLength: 1, maxLength: 14 },
    );
    fc.assert(
      fc.property(
        poolShape,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (shapes, draw) => {
          const pool = shapes.map(([shape, lease], place) => [`p-${place + 1}`, shape, lease] as const);
          const { index, members, leases } = indexedPool(
            pool.map(([name, shape, lease]) => [name, shape, lease]),
          );
          shapes.forEach(([, , previousInstance], place) => {
            const name = `p-${place + 1}`;
            members.set(name, { ...(members.get(name) as MemberFacts), previousInstance });
            index.changed(name);
          });
          const exclude = new Set(
            shapes.flatMap(([, , , excluded], place) => (excluded ? [`p-${place + 1}`] : [])),
          );
          const own = [...leases.values()].filter((lease) => lease.spec.holderIdentity === 'alice');
          const input = { identity: 'alice', order: 'random' as const, random: () => draw, now, exclude };
          const whole = planClaim({ ...input, members: [...members.values()], leases: [...leases.values()] });
          const excerpt = index.excerpt({ identity: 'alice', own, exclude, now, random: () => draw });
          const open = [...members.values()].filter(
            (facts) =>
              !exclude.has(facts.member) &&
              !isGoingDown(facts) &&
              isClaimable(classifyMemberClaim({ member: facts, lease: leases.get(facts.member), now })),
          );
          if (excerpt === undefined) {
            // nothing open to pick: the claim plans over the whole pool
            expect(open).toEqual([]);
            return;
          }
          // an excerpt is offered only with an open member in it
          expect(open.length).toBeGreaterThan(0);
          const planned = planClaim({ ...input, members: excerpt.members, leases: excerpt.leases });
          if (whole.kind === 'create' || whole.kind === 'replace') {
            expect(['create', 'replace']).toContain(planned.kind);
            const taken = (planned as Extract<ClaimPlan, { member: MemberFacts }>).member;
            expect(open.map((facts) => facts.member)).toContain(taken.member);
            // a running open member goes first, as over the whole pool
            if (open.some((facts) => facts.power === 'running')) expect(taken.power).toBe('running');
          } else {
            expect(brief(planned)).toBe(brief(whole));
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

function brief(plan: ClaimPlan): string {
  if (plan.kind === 'refuse') return `refuse ${plan.code} ${plan.resetting ?? ''}`;
  return `${plan.kind} ${plan.member.member}`;
}
