import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ClaimLiveness } from '../../../src/claims/claim-liveness.js';
import { planConsoleOpen } from '../../../src/sessions/plan-console-open.js';

const desktopId = 'vm/corral-vms/devpool-1';
const held: ClaimLiveness = {
  kind: 'held',
  holder: 'alice@example.com',
  expiresAt: new Date('2026-07-02T13:00:00Z'),
  resourceVersion: '7',
};

describe('planConsoleOpen', () => {
  it.each<[ClaimLiveness, object]>([
    [held, { kind: 'count' }],
    [{ kind: 'legacy', holder: 'bob' }, { kind: 'uncounted' }],
    [{ kind: 'orphan', holder: 'bob' }, { kind: 'uncounted' }],
    [
      { kind: 'expired', holder: 'bob', resourceVersion: '7' },
      { kind: 'reject', code: 'CLAIM_EXPIRED' },
    ],
    [
      { kind: 'stale', resourceVersion: '7' },
      { kind: 'reject', code: 'CLAIM_ENDED' },
    ],
    [{ kind: 'free' }, { kind: 'reject', code: 'CLAIM_ENDED' }],
    [{ kind: 'deleting' }, { kind: 'reject', code: 'CLAIM_ENDED' }],
  ])('for a %o claim plans %o', (claim, expected) => {
    expect(planConsoleOpen(claim, desktopId)).toMatchObject(expected);
  });

  it('counts a console only for a live claim, and names the desktop in every refusal', () => {
    const claims = fc.constantFrom<ClaimLiveness>(
      held,
      { kind: 'legacy', holder: 'bob' },
      { kind: 'orphan', holder: 'bob' },
      { kind: 'expired', holder: 'bob', resourceVersion: '7' },
      { kind: 'stale', resourceVersion: '7' },
      { kind: 'free' },
      { kind: 'deleting' },
    );
    fc.assert(
      fc.property(claims, (claim) => {
        const plan = planConsoleOpen(claim, desktopId);
        expect(plan.kind === 'count').toBe(claim.kind === 'held');
        if (plan.kind === 'reject') expect(plan.message).toContain(desktopId);
      }),
    );
  });
});
