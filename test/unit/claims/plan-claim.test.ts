import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimHolder, classifyMemberClaim, isClaimable } from '../../../src/claims/claim-liveness.js';
import { type ClaimPlan, type PlanClaimInput, planClaim } from '../../../src/claims/plan-claim.js';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { isVdiError } from '../../../src/errors.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { type LeaseShape, leaseOf, type MemberShape, member, now } from './member-fixtures.js';
import { thrownBy } from './thrown-by.js';

type Pool = Array<[string, MemberShape, LeaseShape?]>;

function plan(pool: Pool, options: Partial<PlanClaimInput> = {}): ClaimPlan {
  return planClaim({
    members: pool.map(([name, shape]) => member(name, shape)),
    leases: pool.flatMap(([name, , lease]) => (lease ? [leaseOf(name, lease)] : [])),
    identity: 'alice',
    order: 'lowest',
    random: () => 0,
    now,
    ...options,
  });
}

/** The plan in short: its kind and the member it names, or the refusal's code. */
function brief(result: ClaimPlan): string {
  if (result.kind === 'refuse') return `refuse ${result.code}`;
  if (result.kind === 'replace') return `replace ${result.member.member} at ${result.resourceVersion}`;
  if (result.kind === 'adopt') return `adopt ${result.member.member} from ${result.from}`;
  return `${result.kind} ${result.member.member}`;
}

describe('planClaim', () => {
  const cases: Array<[string, Pool, string]> = [
    ['the pool has no member', [], 'refuse POOL_NOT_FOUND'],
    [
      'a free member already running (a warm spare) goes before a lower stopped one',
      [
        ['devpool-1', {}],
        ['devpool-2', { power: 'running' }],
      ],
      'create devpool-2',
    ],
    [
      'every member has a live holder',
      [
        ['devpool-1', { power: 'running', holder: 'bob' }, { holder: 'bob' }],
        ['devpool-2', { power: 'running', holder: 'carol' }, { holder: 'carol' }],
      ],
      'refuse NO_FREE_MEMBER',
    ],
    [
      "the caller's claim that another of its claims took free and has not handed out, on a member still going down",
      [
        ['devpool-1', { power: 'stopping' }, { holder: 'alice', sessionId: 's1' }],
        ['devpool-2', {}],
      ],
      'refuse NO_FREE_MEMBER',
    ],
    [
      "the caller's claim handed out (the copy shows its session), on a member going down: its own guest",
      [
        [
          'devpool-1',
          { power: 'stopping', holder: 'alice', presentedSession: 's1' },
          { holder: 'alice', sessionId: 's1' },
        ],
      ],
      'renew devpool-1',
    ],
    [
      'the caller already holds one, even with others free',
      [
        ['devpool-1', {}],
        ['devpool-2', { power: 'running', holder: 'alice' }, { holder: 'alice' }],
      ],
      'renew devpool-2',
    ],
    [
      'the caller’s own claim is being released, with another member free',
      [
        ['devpool-1', {}],
        [
          'devpool-2',
          { power: 'running', holder: 'alice' },
          { holder: 'alice', sessionId: 's', releasing: 's' },
        ],
      ],
      'create devpool-1',
    ],
    [
      'the caller’s own claim is being released and nothing else is free',
      [
        [
          'devpool-1',
          { power: 'running', holder: 'alice' },
          { holder: 'alice', sessionId: 's', releasing: 's' },
        ],
      ],
      'refuse NO_FREE_MEMBER',
    ],
    [
      'the caller has a v0.6.0 assignment',
      [
        ['devpool-1', {}],
        ['devpool-2', { label: 'alice' }],
      ],
      'adopt devpool-2 from legacy',
    ],
    [
      'the caller shows on a running member whose Lease is gone',
      [
        ['devpool-1', {}],
        ['devpool-2', { power: 'running', holder: 'alice' }],
      ],
      'adopt devpool-2 from orphan',
    ],
    [
      'another user shows on a running member whose Lease is gone',
      [
        ['devpool-1', { power: 'running', holder: 'bob' }],
        ['devpool-2', {}],
      ],
      'create devpool-2',
    ],
    ['a stopped member still shows a released user', [['devpool-1', { holder: 'bob' }]], 'create devpool-1'],
    [
      'the only free member has an expired Lease',
      [
        ['devpool-1', { power: 'running', holder: 'bob' }, { holder: 'bob' }],
        ['devpool-2', { holder: 'carol' }, { holder: 'carol', expired: true, resourceVersion: '91' }],
      ],
      'replace devpool-2 at 91',
    ],
    ['a Lease names nobody', [['devpool-1', {}, { resourceVersion: '17' }]], 'replace devpool-1 at 17'],
    [
      'the only unheld member is being deleted',
      [
        ['devpool-1', { deleting: true }],
        ['devpool-2', { holder: 'bob', power: 'running' }, { holder: 'bob' }],
      ],
      'refuse NO_FREE_MEMBER',
    ],
    [
      'members are listed out of order',
      [
        ['devpool-10', {}],
        ['devpool-2', {}],
        ['devpool-9', {}],
      ],
      'create devpool-2',
    ],
  ];
  it.each(cases.map(([name, input, expected]) => [name, expected, input] as const))(
    'when %s, the plan is: %s',
    (_case, expected, pool) => {
      expect(brief(plan(pool))).toBe(expected);
    },
  );

  it('starts the member it plans for unless it already runs', () => {
    expect(plan([['devpool-1', {}]])).toMatchObject({ kind: 'create', start: true });
    expect(plan([['devpool-1', { power: 'starting' }]])).toMatchObject({ kind: 'create', start: true });
    const held = plan([['devpool-1', { power: 'running', holder: 'alice' }, { holder: 'alice' }]]);
    expect(held).toMatchObject({ kind: 'renew', start: false });
  });

  it('counts one more transition when it replaces a Lease', () => {
    const result = plan([['devpool-1', {}, { holder: 'bob', expired: true, transitions: 4 }]]);
    expect(result).toMatchObject({ kind: 'replace', leaseTransitions: 5 });
  });

  it('picks by the random source in the random order, over the members that are free', () => {
    const pool: Pool = [
      ['devpool-1', {}],
      ['devpool-2', { power: 'running', holder: 'bob' }, { holder: 'bob' }],
      ['devpool-3', {}],
    ];
    expect(brief(plan(pool, { order: 'random', random: () => 0 }))).toBe('create devpool-1');
    expect(brief(plan(pool, { order: 'random', random: () => 0.99 }))).toBe('create devpool-3');
  });

  it('passes over members in exclude', () => {
    const pool: Pool = [
      ['devpool-1', {}],
      ['devpool-2', {}],
      ['devpool-3', {}],
    ];
    const exclude = new Set(['devpool-1', 'devpool-2']);
    expect(brief(plan(pool, { exclude }))).toBe('create devpool-3');
    expect(brief(plan(pool, { exclude, order: 'random', random: () => 0 }))).toBe('create devpool-3');
    expect(plan(pool, { exclude: new Set(['devpool-1', 'devpool-2', 'devpool-3']) })).toEqual({
      kind: 'refuse',
      code: 'NO_FREE_MEMBER',
      goingDown: 0,
    });
  });

  it('picks the same member whatever order the members were listed in', () => {
    const pool: Pool = [
      ['devpool-3', {}],
      ['devpool-1', {}],
      ['devpool-2', {}],
    ];
    const reversed = [...pool].reverse();
    for (const random of [0, 0.4, 0.9]) {
      expect(brief(plan(pool, { order: 'random', random: () => random }))).toBe(
        brief(plan(reversed, { order: 'random', random: () => random })),
      );
    }
  });

  it('picks the member at the random index of the free members in natural order, whatever their listed order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (numbers, random) => {
          const pool: Pool = numbers.map((number) => [`devpool-${number}`, {}]);
          const natural = [...numbers].sort((left, right) => left - right);
          const expected = `devpool-${natural[Math.floor(random * natural.length)]}`;
          expect(brief(plan(pool, { order: 'random', random: () => random }))).toBe(`create ${expected}`);
          expect(brief(plan(pool, { order: 'lowest' }))).toBe(`create devpool-${natural[0]}`);
        },
      ),
    );
  });

  it('passes over a free member whose previous instance is still going down, and counts it in a refusal', () => {
    const members = [
      { ...member('devpool-1'), power: 'stopping' as const, previousInstance: true },
      { ...member('devpool-2'), previousInstance: true },
      member('devpool-3'),
    ];
    const input = { leases: [], identity: 'alice', order: 'lowest' as const, random: () => 0, now };
    expect(brief(planClaim({ ...input, members }))).toBe('create devpool-3');
    expect(planClaim({ ...input, members: members.slice(0, 2) })).toEqual({
      kind: 'refuse',
      code: 'NO_FREE_MEMBER',
      goingDown: 2,
    });
  });

  it('counts a member whose claim is being released as going down, so a claim waits for it rather than refuse', () => {
    const members = [member('devpool-1', { holder: 'bob' }), member('devpool-2', { holder: 'alice' })];
    const alices = leaseOf('devpool-2', { holder: 'alice', sessionId: 'a', releasing: 'a' });
    const leases = [leaseOf('devpool-1', { holder: 'bob', sessionId: 'b', releasing: 'b' }), alices];
    const input = { identity: 'alice', order: 'lowest' as const, random: () => 0, now };
    expect(planClaim({ ...input, members, leases })).toEqual({
      kind: 'refuse',
      code: 'NO_FREE_MEMBER',
      goingDown: 2,
    });
    // a live claim of another identity is not going anywhere
    expect(
      planClaim({ ...input, members, leases: [leaseOf('devpool-1', { holder: 'bob' }), alices] }),
    ).toMatchObject({
      goingDown: 1,
    });
  });

  it('gives no second member to an identity whose live claim is of a member gone or being deleted', () => {
    const input = { identity: 'alice', order: 'lowest' as const, random: () => 0, now };
    const free = member('devpool-1');
    const resetting = { kind: 'refuse', code: 'NO_FREE_MEMBER', goingDown: 0, resetting: 'devpool-2' };
    // gone: a recreate deleted it, or the list is older than the grow that made it
    expect(
      planClaim({ ...input, members: [free], leases: [leaseOf('devpool-2', { holder: 'alice' })] }),
    ).toEqual(resetting);
    const deleting = { ...member('devpool-2'), deleting: true };
    expect(
      planClaim({ ...input, members: [free, deleting], leases: [leaseOf('devpool-2', { holder: 'alice' })] }),
    ).toEqual(resetting);
    // an expired claim, one being released, or another identity's binds nobody to it
    for (const lease of [
      leaseOf('devpool-2', { holder: 'alice', expired: true }),
      leaseOf('devpool-2', { holder: 'alice', sessionId: 's', releasing: 's' }),
      leaseOf('devpool-2', { holder: 'bob' }),
    ])
      expect(brief(planClaim({ ...input, members: [free], leases: [lease] }))).toBe('create devpool-1');
    // the identity's place in the pool's waitlist is a Lease of the pool it holds, but no claim of a member
    const waiting = leaseOf('devpool-2', { holder: 'alice' });
    waiting.metadata.name = 'corral-wait-vm-devpool-0123456789';
    expect(brief(planClaim({ ...input, members: [free], leases: [waiting] }))).toBe('create devpool-1');
  });

  it('resets a member it takes over from another identity’s expired claim, not from its own or an empty one', () => {
    const taken = (lease: LeaseShape) => plan([['devpool-1', { power: 'running' }, lease]]);
    expect(taken({ holder: 'bob', expired: true })).toMatchObject({
      kind: 'replace',
      reset: true,
      start: false,
    });
    expect(taken({ holder: 'alice', expired: true })).toMatchObject({ kind: 'replace', reset: false });
    expect(taken({})).toMatchObject({ kind: 'replace', reset: false });
  });

  it('resets a member whose expired claim was itself a takeover still waiting for its reset, whoever held it', () => {
    // the identity's own takeover expired before its reset ran: the guest of the holder before may still run
    const marked = leaseOf('devpool-1', { holder: 'alice', sessionId: 's', expired: true });
    marked.metadata.annotations = { ...marked.metadata.annotations, 'corral.dev/vdi-reset-due': 's' };
    const result = planClaim({
      members: [member('devpool-1', { power: 'running', holder: 'bob' })],
      leases: [marked],
      identity: 'alice',
      order: 'lowest',
      random: () => 0,
      now,
    });
    expect(result).toMatchObject({ kind: 'replace', reset: true });
  });

  it('tells a renewal that the reset of its takeover is still due', () => {
    const marked = leaseOf('devpool-1', { holder: 'alice', sessionId: 's' });
    marked.metadata.annotations = { ...marked.metadata.annotations, 'corral.dev/vdi-reset-due': 's' };
    const result = planClaim({
      members: [member('devpool-1', { power: 'running', holder: 'alice' })],
      leases: [marked],
      identity: 'alice',
      order: 'lowest',
      random: () => 0,
      now,
    });
    expect(result).toMatchObject({ kind: 'renew', resetDue: true });
    expect(plan([['devpool-1', { power: 'running', holder: 'alice' }, { holder: 'alice' }]])).toMatchObject({
      kind: 'renew',
      resetDue: false,
    });
  });

  it('refuses a random source outside [0, 1) with INVALID_INPUT', () => {
    const error = thrownBy(() => plan([['devpool-1', {}]], { order: 'random', random: () => 1 }));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
  });

  it('refuses an empty identity with INVALID_INPUT', () => {
    expect(
      isVdiError(
        thrownBy(() => plan([['devpool-1', {}]], { identity: '' })),
        'INVALID_INPUT',
      ),
    ).toBe(true);
  });

  const shapes = fc.record({
    power: fc.constantFrom<MemberFacts['power']>('running', 'stopped', 'starting'),
    holder: fc.option(fc.constantFrom('alice', 'bob'), { nil: undefined }),
    deleting: fc.boolean(),
    lease: fc.option(
      fc.record({
        holder: fc.option(fc.constantFrom('alice', 'bob'), { nil: undefined }),
        expired: fc.boolean(),
      }),
      { nil: undefined },
    ),
  });

  it('never hands out a member someone else holds, and refuses only when nothing is takeable', () => {
    fc.assert(
      fc.property(
        fc.array(shapes, { maxLength: 6 }),
        fc.constantFrom<'random' | 'lowest'>('random', 'lowest'),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (drawn, order, random) => {
          const members = drawn.map((shape, index) =>
            member(`devpool-${index + 1}`, {
              power: shape.power,
              deleting: shape.deleting,
              ...(shape.holder ? { holder: shape.holder } : {}),
            }),
          );
          const leases: LeaseObject[] = drawn.flatMap((shape, index) =>
            shape.lease ? [leaseOf(`devpool-${index + 1}`, shape.lease)] : [],
          );
          const result = planClaim({ members, leases, identity: 'alice', order, random: () => random, now });
          const claims = members.map((facts) =>
            classifyMemberClaim({
              member: facts,
              lease: leases.find((lease) => lease.metadata.name === `corral-vdi-${facts.member}`),
              now,
            }),
          );
          if (result.kind === 'refuse') {
            expect(result.code).toBe(members.length === 0 ? 'POOL_NOT_FOUND' : 'NO_FREE_MEMBER');
            if (result.resetting !== undefined) {
              // the caller's own member being deleted (a recreate) is its desktop: no second one meanwhile
              const own = leases.find((lease) => lease.metadata.name === `corral-vdi-${result.resetting}`);
              expect(members.find((facts) => facts.member === result.resetting)?.deleting).toBe(true);
              expect(own?.spec.holderIdentity).toBe('alice');
              return;
            }
            expect(claims.some((claim) => isClaimable(claim) || claimHolder(claim) === 'alice')).toBe(false);
            return;
          }
          const claim = claims[members.indexOf(result.member)];
          if (claim === undefined) throw new Error('the plan names a member that is not in the pool');
          expect(result.start).toBe(result.member.power !== 'running');
          if (result.kind === 'renew' || result.kind === 'adopt') expect(claimHolder(claim)).toBe('alice');
          else expect(isClaimable(claim)).toBe(true);
          // a member of the caller's always comes first, so a retry never takes a second desktop
          if (claims.some((other) => claimHolder(other) === 'alice'))
            expect(claimHolder(claim)).toBe('alice');
        },
      ),
    );
  });
});
