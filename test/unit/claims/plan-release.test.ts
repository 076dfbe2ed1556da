import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type PlanReleaseInput, planRelease, type ReleasePlan } from '../../../src/claims/plan-release.js';
import { type LeaseShape, leaseOf, type MemberShape, member, now } from './member-fixtures.js';

interface Case {
  /** The member as read; `undefined` when its object is gone. */
  shape: MemberShape | undefined;
  lease?: LeaseShape;
  actor?: string;
  asAdmin?: boolean;
  expectedSessionId?: string;
}

function plan(input: Case): ReleasePlan {
  const release: PlanReleaseInput = {
    kind: 'vm',
    namespace: 'corral-vms',
    member: 'devpool-1',
    facts: input.shape && member('devpool-1', input.shape),
    lease: input.lease && leaseOf('devpool-1', input.lease),
    actor: input.actor ?? 'alice',
    asAdmin: input.asAdmin ?? false,
    expectedSessionId: input.expectedSessionId,
    now,
  };
  return planRelease(release);
}

/** The plan in short: the refusal's code, or how it resets, for whom, and what else it does (a Lease not `resume`d is marked first). */
function brief(result: ReleasePlan): string {
  if (result.kind === 'refuse') return `refuse ${result.code}`;
  return [
    `${result.how} for ${result.holder}`,
    ...(result.force ? ['force'] : []),
    ...(result.interrupted ? ['interrupted'] : []),
    ...(result.resume ? ['resume'] : []),
    result.lease ? 'delete Lease' : 'no Lease',
    ...(result.clearPresentation ? ['clear'] : []),
  ].join(', ');
}

const running = { power: 'running', holder: 'alice' } as const;

describe('planRelease', () => {
  const cases: Array<[string, Case, string]> = [
    [
      'the holder releases a persistent member',
      { shape: running, lease: { holder: 'alice' } },
      'stop for alice, delete Lease, clear',
    ],
    [
      'the holder releases an ephemeral member',
      { shape: { ...running, ephemeral: true }, lease: { holder: 'alice' } },
      'recreate for alice, delete Lease',
    ],
    ['another user asks', { shape: running, lease: { holder: 'alice' }, actor: 'bob' }, 'refuse NOT_HOLDER'],
    [
      'an administrator releases another user’s desktop',
      { shape: running, lease: { holder: 'alice' }, actor: 'admin', asAdmin: true },
      'stop for alice, force, delete Lease, clear',
    ],
    ['nobody holds it', { shape: {} }, 'refuse CLAIM_ENDED'],
    [
      'nobody holds it, to an administrator',
      { shape: {}, actor: 'admin', asAdmin: true },
      'refuse CLAIM_ENDED',
    ],
    ['there is neither member nor Lease', { shape: undefined }, 'refuse MEMBER_NOT_FOUND'],
    [
      'the member is gone while its Lease holds it',
      { shape: undefined, lease: { holder: 'alice' } },
      'recreate for alice, interrupted, delete Lease',
    ],
    [
      'the member is being deleted while its Lease holds it',
      { shape: { holder: 'alice', deleting: true }, lease: { holder: 'alice' } },
      'recreate for alice, interrupted, delete Lease',
    ],
    ['the member is being deleted and nothing holds it', { shape: { deleting: true } }, 'refuse CLAIM_ENDED'],
    [
      'the holder gives back an expired claim',
      { shape: running, lease: { holder: 'alice', expired: true } },
      'stop for alice, delete Lease, clear',
    ],
    ['the holder’s Lease is gone but the member runs', { shape: running }, 'stop for alice, no Lease, clear'],
    [
      'an administrator frees a v0.6.0 assignment',
      { shape: { label: 'carol' }, actor: 'admin', asAdmin: true },
      'stop for carol, force, no Lease, clear',
    ],
    [
      'the claim is not the session the caller read',
      { shape: running, lease: { holder: 'alice', sessionId: 'new' }, expectedSessionId: 'old' },
      'refuse CLAIM_CHANGED',
    ],
    [
      'the claim is the session the caller read',
      { shape: running, lease: { holder: 'alice', sessionId: 'old' }, expectedSessionId: 'old' },
      'stop for alice, delete Lease, clear',
    ],
    [
      'the holder releases again after a release of the same session stopped half way',
      {
        shape: { power: 'stopped', holder: 'alice' },
        lease: { holder: 'alice', sessionId: 's1', releasing: 's1' },
      },
      'stop for alice, resume, delete Lease, clear',
    ],
    [
      'the Lease carries the releasing mark of an earlier session',
      { shape: running, lease: { holder: 'alice', sessionId: 's2', releasing: 's1' } },
      'stop for alice, delete Lease, clear',
    ],
    [
      'another user asks while a release is under way',
      { shape: running, lease: { holder: 'alice', sessionId: 's1', releasing: 's1' }, actor: 'bob' },
      'refuse NOT_HOLDER',
    ],
  ];
  it.each(cases.map(([name, input, expected]) => [name, expected, input] as const))(
    'when %s, the plan is: %s',
    (_case, expected, input) => {
      expect(brief(plan(input))).toBe(expected);
    },
  );

  it('deletes the Lease on the uid and resourceVersion it read, and takes the pool from it once the member is gone', () => {
    expect(plan({ shape: undefined, lease: { holder: 'alice', resourceVersion: '88' } })).toMatchObject({
      kind: 'reset',
      pool: 'devpool',
      lease: { name: 'corral-vdi-devpool-1', uid: 'lease-uid-devpool-1', resourceVersion: '88' },
    });
  });

  it('says in the refusal what to do and which desktop it is', () => {
    const refused = plan({ shape: undefined });
    expect(refused).toMatchObject({
      kind: 'refuse',
      reason: 'There is no VM "devpool-1" in namespace "corral-vms"; check the name and the namespace.',
    });
  });

  it('resets only for the holder or an administrator, recreating exactly what is ephemeral or gone', () => {
    const holders = fc.option(fc.constantFrom('alice', 'bob'), { nil: undefined });
    fc.assert(
      fc.property(
        fc.option(
          fc.record({
            power: fc.constantFrom('running', 'stopped') as fc.Arbitrary<'running' | 'stopped'>,
            holder: holders,
            ephemeral: fc.boolean(),
            deleting: fc.boolean(),
          }),
          { nil: undefined },
        ),
        fc.option(fc.record({ holder: holders, expired: fc.boolean() }), { nil: undefined }),
        fc.constantFrom('alice', 'bob', 'admin'),
        fc.boolean(),
        (drawn, lease, actor, asAdmin) => {
          const shape = drawn && {
            power: drawn.power,
            ephemeral: drawn.ephemeral,
            deleting: drawn.deleting,
            ...(drawn.holder ? { holder: drawn.holder } : {}),
          };
          const result = plan({ shape, ...(lease ? { lease } : {}), actor, asAdmin });
          if (result.kind === 'refuse') return;
          expect(result.holder === actor || asAdmin).toBe(true);
          expect(result.force).toBe(result.holder !== actor);
          const gone = shape === undefined || shape.deleting;
          expect(result.how).toBe(gone || shape?.ephemeral ? 'recreate' : 'stop');
          expect(result.interrupted).toBe(gone);
          expect(result.lease === undefined).toBe(lease === undefined);
          expect(result.clearPresentation).toBe(result.how === 'stop');
        },
      ),
    );
  });
});
