import { describe, expect, it } from 'vitest';
import {
  type AccessDecision,
  type AccessRequest,
  canInspect,
  canOpenConsole,
  canRelease,
  canStart,
  refusalError,
} from '../../../src/claims/access.js';
import type { MemberClassification } from '../../../src/claims/classify-member.js';
import { isVdiError } from '../../../src/errors.js';

const desktopId = 'vm/corral-vms/devpool-1';
const member = 'devpool-1';
const expiresAt = new Date('2026-07-02T13:00:00Z');
const expiredAt = new Date('2026-07-02T11:30:00Z');

// The caller is alice in every state; bob is someone else.
const states: Record<string, { state: MemberClassification; identity: string }> = {
  'held by the caller': {
    identity: 'alice',
    state: { kind: 'held-by-caller', member, holder: 'alice', expiresAt, resourceVersion: '7' },
  },
  'held by another': {
    identity: 'alice',
    state: { kind: 'held-by-other', member, holder: 'bob', expiresAt },
  },
  'expired, naming the caller': {
    identity: 'alice',
    state: {
      kind: 'stale',
      member,
      reason: 'expired',
      previousHolder: 'alice',
      expiredAt,
      resourceVersion: '7',
    },
  },
  'expired, naming another': {
    identity: 'alice',
    state: {
      kind: 'stale',
      member,
      reason: 'expired',
      previousHolder: 'bob',
      expiredAt,
      resourceVersion: '7',
    },
  },
  'a Lease naming nobody': {
    identity: 'alice',
    state: { kind: 'stale', member, reason: 'no-holder', resourceVersion: '7' },
  },
  free: { identity: 'alice', state: { kind: 'free', member } },
  'a v0.6.0 label naming the caller': {
    identity: 'alice',
    state: { kind: 'legacy-adoptable', member, user: 'alice' },
  },
  'a v0.6.0 label naming another': {
    identity: 'alice',
    state: { kind: 'legacy-held-by-other', member, user: 'bob' },
  },
  'Lease-less, showing the caller': {
    identity: 'alice',
    state: { kind: 'orphan-adoptable', member, holder: 'alice' },
  },
  'Lease-less, showing another': {
    identity: 'alice',
    state: { kind: 'orphan-held-by-other', member, holder: 'bob' },
  },
  'being deleted': { identity: 'alice', state: { kind: 'unavailable', member, reason: 'deleting' } },
};

type Rule = (request: AccessRequest) => AccessDecision;
const rules: Record<string, Rule> = {
  inspect: canInspect,
  start: canStart,
  release: canRelease,
  console: (request) => canOpenConsole({ ...request, doing: 'connect to' }),
};

function outcome(rule: Rule, name: string, isAdmin: boolean): string {
  const { state, identity } = states[name] as { state: MemberClassification; identity: string };
  const decision = rule({ state, identity, isAdmin, desktopId });
  return decision.kind === 'allowed' ? `allowed:${decision.holder ?? '-'}` : decision.code;
}

// state, action, what alice gets as a user, what she gets as an administrator (or in open mode)
const table: Array<[string, string, string, string]> = [
  ['held by the caller', 'inspect', 'allowed:alice', 'allowed:alice'],
  ['held by the caller', 'start', 'allowed:alice', 'allowed:alice'],
  ['held by the caller', 'release', 'allowed:alice', 'allowed:alice'],
  ['held by the caller', 'console', 'allowed:alice', 'allowed:alice'],
  ['held by another', 'inspect', 'NOT_HOLDER', 'allowed:bob'],
  ['held by another', 'start', 'NOT_HOLDER', 'allowed:bob'],
  ['held by another', 'release', 'NOT_HOLDER', 'allowed:bob'],
  ['held by another', 'console', 'NOT_HOLDER', 'allowed:bob'],
  ['expired, naming the caller', 'inspect', 'allowed:alice', 'allowed:alice'],
  ['expired, naming the caller', 'start', 'CLAIM_EXPIRED', 'CLAIM_EXPIRED'],
  ['expired, naming the caller', 'release', 'allowed:alice', 'allowed:alice'],
  ['expired, naming the caller', 'console', 'CLAIM_EXPIRED', 'CLAIM_EXPIRED'],
  ['expired, naming another', 'inspect', 'NOT_HOLDER', 'allowed:bob'],
  ['expired, naming another', 'start', 'CLAIM_EXPIRED', 'CLAIM_EXPIRED'],
  ['expired, naming another', 'release', 'NOT_HOLDER', 'allowed:bob'],
  ['expired, naming another', 'console', 'CLAIM_EXPIRED', 'CLAIM_EXPIRED'],
  ['a Lease naming nobody', 'inspect', 'CLAIM_ENDED', 'allowed:-'],
  ['a Lease naming nobody', 'start', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['a Lease naming nobody', 'release', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['a Lease naming nobody', 'console', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['free', 'inspect', 'CLAIM_ENDED', 'allowed:-'],
  ['free', 'start', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['free', 'release', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['free', 'console', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['a v0.6.0 label naming the caller', 'inspect', 'allowed:alice', 'allowed:alice'],
  ['a v0.6.0 label naming the caller', 'start', 'CLAIM_ENDED', 'allowed:alice'],
  ['a v0.6.0 label naming the caller', 'release', 'allowed:alice', 'allowed:alice'],
  ['a v0.6.0 label naming the caller', 'console', 'CLAIM_ENDED', 'allowed:alice'],
  ['a v0.6.0 label naming another', 'inspect', 'NOT_HOLDER', 'allowed:bob'],
  ['a v0.6.0 label naming another', 'start', 'NOT_HOLDER', 'allowed:bob'],
  ['a v0.6.0 label naming another', 'release', 'NOT_HOLDER', 'allowed:bob'],
  ['a v0.6.0 label naming another', 'console', 'NOT_HOLDER', 'allowed:bob'],
  ['Lease-less, showing the caller', 'inspect', 'allowed:alice', 'allowed:alice'],
  ['Lease-less, showing the caller', 'start', 'CLAIM_ENDED', 'allowed:alice'],
  ['Lease-less, showing the caller', 'release', 'allowed:alice', 'allowed:alice'],
  ['Lease-less, showing the caller', 'console', 'CLAIM_ENDED', 'allowed:alice'],
  ['Lease-less, showing another', 'inspect', 'NOT_HOLDER', 'allowed:bob'],
  ['Lease-less, showing another', 'start', 'NOT_HOLDER', 'allowed:bob'],
  ['Lease-less, showing another', 'release', 'NOT_HOLDER', 'allowed:bob'],
  ['Lease-less, showing another', 'console', 'NOT_HOLDER', 'allowed:bob'],
  ['being deleted', 'inspect', 'CLAIM_ENDED', 'allowed:-'],
  ['being deleted', 'start', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['being deleted', 'release', 'CLAIM_ENDED', 'CLAIM_ENDED'],
  ['being deleted', 'console', 'CLAIM_ENDED', 'CLAIM_ENDED'],
];

describe('the access rule', () => {
  it('covers every state with every action', () => {
    const covered = new Set(table.map(([state, action]) => `${state}/${action}`));
    expect(covered.size).toBe(table.length);
    expect(covered.size).toBe(Object.keys(states).length * Object.keys(rules).length);
  });

  it.each(table)('for a desktop %s, to %s, gives a user %s and an admin %s', (state, action, user, admin) => {
    const rule = rules[action] as Rule;
    expect(outcome(rule, state, false)).toBe(user);
    expect(outcome(rule, state, true)).toBe(admin);
  });

  it.each<[string, Rule, string]>([
    [
      'held by another',
      rules.console as Rule,
      `${desktopId} is held by another user; only its holder or an admin can connect to it.`,
    ],
    [
      'held by another',
      canRelease,
      `${desktopId} is held by another user; only its holder or an admin can release it.`,
    ],
    [
      'expired, naming the caller',
      canStart,
      `The claim on ${desktopId} expired at 2026-07-02T11:30:00.000Z; claim the pool again.`,
    ],
    ['free', canRelease, `Desktop ${desktopId} is not claimed; there is nothing to release.`],
    ['free', canStart, `${desktopId} is not claimed: its claim has ended. Claim the pool to get a desktop.`],
    [
      'a v0.6.0 label naming the caller',
      canStart,
      `${desktopId} is assigned to you from before claims had Leases; claim its pool to take it over, then start it.`,
    ],
    [
      'Lease-less, showing the caller',
      rules.console as Rule,
      `${desktopId} shows you as its user but its claim Lease is gone; claim its pool to take it back, then connect to it.`,
    ],
    ['being deleted', canStart, `${desktopId} is being deleted; claim a desktop from its pool.`],
  ])('refuses a desktop %s with a reason that says what to do next', (name, rule, reason) => {
    const { state, identity } = states[name] as { state: MemberClassification; identity: string };
    const decision = rule({ state, identity, isAdmin: false, desktopId });
    expect(decision).toMatchObject({ kind: 'refused', reason });
  });

  it('turns a refusal into the VdiError a front end throws, with the desktop and the expiry', () => {
    const { state, identity } = states['expired, naming the caller'] as AccessRequest;
    const decision = canOpenConsole({ state, identity, isAdmin: false, desktopId, doing: 'connect to' });
    if (decision.kind !== 'refused') throw new Error('expected a refusal');
    const error = refusalError(decision);
    expect(isVdiError(error, 'CLAIM_EXPIRED')).toBe(true);
    expect(error.httpStatus).toBe(409);
    expect(error.details).toEqual({ desktopId, expiredAt: '2026-07-02T11:30:00.000Z' });
  });
});
