import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../../src/errors.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import {
  desktopsHeldBy,
  lowestLimit,
  planUserLimit,
  userLimitError,
} from '../../../src/limits/user-limit.js';

const now = new Date('2026-07-02T12:00:00.000Z');
const renewed = '2026-07-02T11:30:00.000000Z';

function claimLease(
  member: string,
  holder: string,
  options: { kind?: string; renewTime?: string; name?: string; releasing?: boolean } = {},
): LeaseObject {
  return {
    metadata: {
      name: options.name ?? `corral-vdi-${member}`,
      namespace: 'corral-vms',
      resourceVersion: '1',
      labels: {
        'corral.dev/vdi-pool': member.replace(/-\d+$/, ''),
        ...(options.kind === undefined ? {} : { 'corral.dev/vdi-kind': options.kind }),
        'corral.dev/vdi-member': member,
      },
      annotations: {
        'corral.dev/vdi-session-id': 's',
        ...(options.releasing ? { 'corral.dev/vdi-releasing': 's' } : {}),
      },
    },
    spec: { holderIdentity: holder, renewTime: options.renewTime ?? renewed, leaseDurationSeconds: 3600 },
  };
}

describe('desktopsHeldBy', () => {
  it('names the live claims of the identity in every pool and kind, also those being released', () => {
    const leases = [
      claimLease('gpu-2', 'alice', { kind: 'vm' }),
      claimLease('devbox-1', 'alice', { kind: 'ct' }),
      claimLease('dev-1', 'alice', { releasing: true }),
    ];
    expect(desktopsHeldBy({ leases, identity: 'alice', now })).toEqual([
      'ct/corral-vms/devbox-1',
      'vm/corral-vms/dev-1',
      'vm/corral-vms/gpu-2',
    ]);
  });

  it.each([
    ['an expired claim', claimLease('gpu-1', 'alice', { renewTime: '2026-07-02T10:00:00.000000Z' })],
    ["another identity's claim whose holder hash collides", claimLease('gpu-1', 'alice@example.com')],
    ["a waiter's Lease", claimLease('gpu-1', 'alice', { name: 'corral-wait-vm-gpu-0123456789' })],
  ])('counts nothing for %s', (_, lease) => {
    expect(desktopsHeldBy({ leases: [lease], identity: 'alice', now })).toEqual([]);
  });
});

describe('planUserLimit', () => {
  const two = [claimLease('gpu-1', 'alice'), claimLease('devbox-1', 'alice', { kind: 'ct' })];

  it.each([
    ['no limit allows any number', two, undefined, true],
    ['fewer desktops than the limit allow one more', two, 3, true],
    ['as many desktops as the limit refuse', two, 2, false],
    ['more desktops than the limit (a limit lowered later) refuse', two, 1, false],
    ['a limit of one allows the first desktop', [], 1, true],
  ])('%s', (_, leases, limit, allowed) => {
    expect(planUserLimit({ leases, identity: 'alice', limit, now }).kind).toBe(
      allowed ? 'allowed' : 'refused',
    );
  });

  it('refuses with USER_LIMIT_REACHED, naming the desktops held, the limit and what to do', () => {
    const decision = planUserLimit({ leases: two, identity: 'alice', limit: 2, now });
    if (decision.kind !== 'refused') throw new Error('expected a refusal');
    const error = userLimitError('alice', decision);
    expect(isVdiError(error, 'USER_LIMIT_REACHED')).toBe(true);
    expect(error.message).toBe(
      'alice may hold 2 desktops at a time and holds ct/corral-vms/devbox-1, vm/corral-vms/gpu-1; release one, then claim again.',
    );
    expect(error.details).toEqual({
      identity: 'alice',
      limit: 2,
      held: ['ct/corral-vms/devbox-1', 'vm/corral-vms/gpu-1'],
    });
  });

  it('allows exactly while the live claims of the identity are fewer than the limit', () => {
    const arbitraryLease = fc
      .record({
        member: fc.constantFrom('gpu-1', 'gpu-2', 'devbox-1', 'dev-3'),
        holder: fc.constantFrom('alice', 'bob'),
        expired: fc.boolean(),
      })
      .map(({ member, holder, expired }) =>
        claimLease(member, holder, expired ? { renewTime: '2026-07-02T10:00:00.000000Z' } : {}),
      );
    fc.assert(
      fc.property(fc.array(arbitraryLease), fc.integer({ min: 1, max: 5 }), (leases, limit) => {
        const live = new Set(
          leases
            .filter((lease) => lease.spec.holderIdentity === 'alice' && lease.spec.renewTime === renewed)
            .map((lease) => lease.metadata.name),
        );
        const decision = planUserLimit({ leases, identity: 'alice', limit, now });
        expect(decision.kind).toBe(live.size < limit ? 'allowed' : 'refused');
      }),
    );
  });
});

describe('lowestLimit', () => {
  it.each([
    [[undefined, undefined], undefined],
    [[3, undefined], 3],
    [[undefined, 2], 2],
    [[3, 1], 1],
  ])('of %j is %s', (limits, lowest) => {
    expect(lowestLimit(...limits)).toBe(lowest);
  });
});
