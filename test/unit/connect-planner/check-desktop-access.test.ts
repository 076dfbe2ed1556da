import { describe, expect, it } from 'vitest';
import type { MemberClassification } from '../../../src/claims/classify-member.js';
import { checkDesktopAccess } from '../../../src/connect-planner/check-desktop-access.js';
import { isVdiError, type VdiErrorCode } from '../../../src/errors.js';

const desktopId = 'vm/corral-vms/devpool-1';
const member = 'devpool-1';
const expiresAt = new Date('2026-07-02T13:00:00Z');

// Each state with what a non-admin and an admin get: the holder's name or an error code.
const table: Array<[string, MemberClassification, string | VdiErrorCode, string | VdiErrorCode]> = [
  [
    'held by the caller',
    { kind: 'held-by-caller', member, holder: 'alice', expiresAt, resourceVersion: '7' },
    'alice',
    'alice',
  ],
  ['held by another user', { kind: 'held-by-other', member, holder: 'bob', expiresAt }, 'NOT_HOLDER', 'bob'],
  ['free', { kind: 'free', member }, 'CLAIM_ENDED', 'CLAIM_ENDED'],
  [
    'expired',
    {
      kind: 'stale',
      member,
      reason: 'expired',
      previousHolder: 'alice',
      expiredAt: expiresAt,
      resourceVersion: '7',
    },
    'CLAIM_EXPIRED',
    'CLAIM_EXPIRED',
  ],
  [
    'without a holder',
    { kind: 'stale', member, reason: 'no-holder', resourceVersion: '7' },
    'CLAIM_ENDED',
    'CLAIM_ENDED',
  ],
  [
    'a v0.6.0 assignment to the caller',
    { kind: 'legacy-adoptable', member, user: 'alice' },
    'CLAIM_ENDED',
    'alice',
  ],
  [
    'a v0.6.0 assignment to another user',
    { kind: 'legacy-held-by-other', member, user: 'bob' },
    'NOT_HOLDER',
    'bob',
  ],
  ['an orphan of the caller', { kind: 'orphan-adoptable', member, holder: 'alice' }, 'CLAIM_ENDED', 'alice'],
  ['an orphan of another user', { kind: 'orphan-held-by-other', member, holder: 'bob' }, 'NOT_HOLDER', 'bob'],
  ['being deleted', { kind: 'unavailable', member, reason: 'deleting' }, 'CLAIM_ENDED', 'CLAIM_ENDED'],
];

function outcome(state: MemberClassification, asAdmin: boolean): string {
  try {
    return checkDesktopAccess(state, { desktopId, asAdmin, action: 'connect to' }).holder;
  } catch (error) {
    if (!isVdiError(error)) throw error;
    return error.code;
  }
}

describe('checkDesktopAccess', () => {
  it.each(table)('for a desktop %s gives a user %j and an admin %j', (_name, state, user, admin) => {
    expect(outcome(state, false)).toBe(user);
    expect(outcome(state, true)).toBe(admin);
  });

  it('tells the caller of an expired claim when it expired and to claim the pool again', () => {
    expect(() =>
      checkDesktopAccess(table[3]![1], { desktopId, asAdmin: false, action: 'connect to' }),
    ).toThrow(
      'The claim on vm/corral-vms/devpool-1 expired at 2026-07-02T13:00:00.000Z; claim the pool again.',
    );
  });

  it('does not name the other holder to a caller who is not an admin', () => {
    expect(() =>
      checkDesktopAccess(table[1]![1], { desktopId, asAdmin: false, action: 'connect to' }),
    ).toThrow(
      /^vm\/corral-vms\/devpool-1 is held by another user; only its holder or an admin can connect to it\.$/,
    );
  });
});
