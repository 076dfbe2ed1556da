import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ClaimLiveness,
  claimHolder,
  classifyClaim,
  classifyLease,
  isClaimable,
} from '../../../src/claims/claim-liveness.js';
import { classifyMember } from '../../../src/claims/classify-member.js';
import { isVdiError } from '../../../src/errors.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { thrownBy } from './thrown-by.js';

const now = new Date('2026-07-02T12:30:00.000Z');

function lease(spec: LeaseObject['spec'], annotations?: Record<string, string>): LeaseObject {
  return {
    metadata: {
      name: 'corral-vdi-devpool-1',
      resourceVersion: '42',
      ...(annotations ? { annotations } : {}),
    },
    spec,
  };
}

function vm(
  marks: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
  power: 'stopped' | 'running' = 'stopped',
  deleting = false,
): VirtualMachine {
  return {
    metadata: {
      name: 'devpool-1',
      labels: { 'corral.dev/vdi-pool': 'devpool', ...marks.labels },
      ...(marks.annotations ? { annotations: marks.annotations } : {}),
      ...(deleting ? { deletionTimestamp: '2026-07-02T12:29:00Z' } : {}),
    },
    spec: { runStrategy: power === 'running' ? 'Always' : 'Halted' },
    status: { printableStatus: power === 'running' ? 'Running' : 'Stopped' },
  };
}

const presentedTo = (identity: string) => ({
  labels: { 'corral.dev/vdi-assigned-to': identity.replace('@', '_') },
  annotations: {
    'corral.dev/vdi-assigned-to': identity,
    'corral.dev/vdi-claimed-at': '2026-07-02T12:00:00Z',
  },
});
const legacyTo = (user: string) => ({ labels: { 'corral.dev/vdi-assigned-to': user } });

const live = {
  holderIdentity: 'alice',
  renewTime: '2026-07-02T12:00:00.000000Z',
  leaseDurationSeconds: 3600,
};
const ranOut = {
  holderIdentity: 'alice',
  renewTime: '2026-07-02T11:00:00.000000Z',
  leaseDurationSeconds: 1800,
};
const timeless = { holderIdentity: 'alice' };

// Every state, with who it belongs to and whether another claimant may take it.
const table: Array<
  [string, VirtualMachine, LeaseObject | undefined, ClaimLiveness['kind'], string | undefined, boolean]
> = [
  ['no Lease and no marks', vm(), undefined, 'free', undefined, true],
  ['a live Lease', vm(presentedTo('alice'), 'running'), lease(live), 'held', 'alice', false],
  [
    'a Lease at its last bound instant',
    vm(),
    lease({ ...live, renewTime: '2026-07-02T11:30:00Z' }),
    'held',
    'alice',
    false,
  ],
  [
    'a Lease past its time that names a holder',
    vm(presentedTo('alice'), 'running'),
    lease(ranOut),
    'expired',
    undefined,
    true,
  ],
  ['a Lease naming a holder without a readable time', vm(), lease(timeless), 'expired', undefined, true],
  ['a Lease naming no holder', vm(), lease({ renewTime: live.renewTime }), 'stale', undefined, true],
  ['a v0.6.0 label only', vm(legacyTo('alice')), undefined, 'legacy', 'alice', false],
  ['a running VM whose Lease is gone', vm(presentedTo('bob'), 'running'), undefined, 'orphan', 'bob', false],
  ['a stopped VM whose Lease is gone', vm(presentedTo('bob')), undefined, 'free', undefined, true],
  ['a VM being deleted', vm({}, 'stopped', true), lease(live), 'deleting', undefined, false],
];

describe('classifyClaim', () => {
  it.each(table)(
    'reads %s as %s, held by %j, claimable: %s',
    (_case, member, claim, kind, holder, claimable) => {
      const liveness = classifyClaim({ vm: member, lease: claim, now });
      expect(liveness.kind).toBe(kind);
      expect(claimHolder(liveness)).toBe(holder);
      expect(isClaimable(liveness)).toBe(claimable);
    },
  );

  it('tells when an expired Lease ran out and whom it named', () => {
    expect(classifyClaim({ vm: vm(), lease: lease(ranOut), now })).toEqual({
      kind: 'expired',
      holder: 'alice',
      expiredAt: new Date('2026-07-02T11:30:00.000Z'),
      resourceVersion: '42',
    });
  });

  it('carries what a renewal and a release need from a live Lease', () => {
    const read = lease(
      { ...live, acquireTime: '2026-07-02T11:00:00Z' },
      { 'corral.dev/vdi-session-id': 's-1' },
    );
    expect(classifyClaim({ vm: vm(), lease: read, now })).toEqual({
      kind: 'held',
      holder: 'alice',
      expiresAt: new Date('2026-07-02T13:00:00.000Z'),
      sessionId: 's-1',
      acquireTime: new Date('2026-07-02T11:00:00Z'),
      renewTime: new Date('2026-07-02T12:00:00Z'),
      resourceVersion: '42',
    });
  });

  it.each<[string, VirtualMachine, LeaseObject | undefined, Date, RegExp]>([
    ['an invalid date', vm(), undefined, new Date(Number.NaN), /not a valid Date/],
    ['a VM without a name', { metadata: {}, spec: {} }, undefined, now, /no metadata.name/],
    [
      'another member’s Lease',
      vm(),
      { ...lease(live), metadata: { name: 'corral-vdi-x', resourceVersion: '1' } },
      now,
      /not the claim of member/,
    ],
    [
      'a Lease not read from the cluster',
      vm(),
      { ...lease(live), metadata: { name: 'corral-vdi-devpool-1' } },
      now,
      /no resourceVersion/,
    ],
  ])('refuses %s with INVALID_INPUT', (_case, member, claim, at, message) => {
    const error = thrownBy(() => classifyClaim({ vm: member, lease: claim, now: at }));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});

describe('classifyLease', () => {
  it('agrees with classifyClaim for every Lease of a member that is not being deleted', () => {
    const leases = fc.record({
      holderIdentity: fc.option(fc.constantFrom('alice', 'bob', ''), { nil: undefined }),
      renewTime: fc.option(
        fc
          .date({
            min: new Date('2026-07-02T10:00:00Z'),
            max: new Date('2026-07-02T13:00:00Z'),
            noInvalidDate: true,
          })
          .map((date) => date.toISOString()),
        { nil: undefined },
      ),
      leaseDurationSeconds: fc.option(fc.integer({ min: 0, max: 7200 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(leases, (spec) => {
        const read = lease(
          Object.fromEntries(Object.entries(spec).filter(([, value]) => value !== undefined)),
        );
        expect(classifyClaim({ vm: vm(), lease: read, now })).toEqual(classifyLease(read, now));
      }),
    );
  });
});

describe('classifyMember, built on classifyClaim', () => {
  it.each(table)(
    'tells %s to a claimant as something a claim may take exactly when it is claimable',
    (_case, member, claim, _kind, _holder, claimable) => {
      const state = classifyMember({ vm: member, lease: claim, identity: 'carol', now });
      expect(state.kind === 'free' || state.kind === 'stale').toBe(claimable);
    },
  );
});
