import { describe, expect, it } from 'vitest';
import type { MemberFacts } from '../../../src/desktop-backend.js';
import { planCopySweep } from '../../../src/sessions/plan-copy-sweep.js';
import { leaseOf, type MemberShape, member } from '../claims/member-fixtures.js';

/** A member whose copy a claim of this library wrote: it carries the claim's session ID. */
function presented(name: string, shape: MemberShape & { sessionId?: string }): MemberFacts {
  const facts = member(name, shape);
  return { ...facts, presentation: { ...facts.presentation, sessionId: shape.sessionId ?? `s-${name}` } };
}

const swept = (copies: ReturnType<typeof planCopySweep>) =>
  copies.map(({ facts, holder, sessionId }) => [facts.member, holder, sessionId]);

describe('planCopySweep', () => {
  it('takes a stopped member whose copy no Lease backs, and a member whose Lease names another holder', () => {
    const leases = [leaseOf('m-2', { holder: 'bob' }), leaseOf('m-3', {})];
    const members = [
      presented('m-1', { holder: 'alice' }),
      presented('m-2', { holder: 'dave', power: 'running' }),
      presented('m-3', { holder: 'erin' }),
    ];
    expect(swept(planCopySweep(leases, members))).toEqual([
      ['m-1', 'alice', 's-m-1'],
      ['m-2', 'dave', 's-m-2'],
      ['m-3', 'erin', 's-m-3'],
    ]);
  });

  it("keeps a copy its Lease names, expired or being released, whatever the copy's session", () => {
    const leases = [
      leaseOf('m-1', { holder: 'alice' }),
      leaseOf('m-2', { holder: 'bob', expired: true }),
      leaseOf('m-3', { holder: 'carol', releasing: 's-m-3' }),
    ];
    const members = [
      presented('m-1', { holder: 'alice', sessionId: 'an-older-session' }),
      presented('m-2', { holder: 'bob' }),
      presented('m-3', { holder: 'carol' }),
    ];
    expect(planCopySweep(leases, members)).toEqual([]);
  });

  it('keeps an orphan (a running member with no Lease), a v0.6.0 assignment, a member being deleted and a free one', () => {
    const members = [
      presented('m-1', { holder: 'alice', power: 'running' }),
      presented('m-2', { holder: 'bob', power: 'starting' }),
      member('m-3', { holder: 'carol' }),
      member('m-4', { label: 'dave' }),
      presented('m-5', { holder: 'erin', deleting: true }),
      member('m-6'),
    ];
    expect(planCopySweep([], members)).toEqual([]);
  });
});
