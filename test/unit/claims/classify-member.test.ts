import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLeaseExpired, leaseExpiresAt } from '../../../src/claims/claim-liveness.js';
import {
  classifyMember,
  type MemberClassification,
  type MemberFacts,
} from '../../../src/claims/classify-member.js';
import { isVdiError } from '../../../src/errors.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { loadV060Fixture } from '../upgrade/v0.6.0-fixtures.js';
import { thrownBy } from './thrown-by.js';

const now = new Date('2026-07-02T12:30:00.000Z');
const alice = 'alice@example.com';

interface LeaseShape {
  member?: string;
  holder?: string;
  acquireTime?: string;
  renewTime?: string;
  duration?: number;
  sessionId?: string;
}

function lease({
  member = 'devpool-1',
  holder,
  acquireTime,
  renewTime,
  duration,
  sessionId,
}: LeaseShape): LeaseObject {
  return {
    metadata: {
      name: `corral-vdi-${member}`,
      resourceVersion: '4711',
      labels: { 'corral.dev/vdi-pool': 'devpool', 'corral.dev/vdi-member': member },
      ...(sessionId === undefined ? {} : { annotations: { 'corral.dev/vdi-session-id': sessionId } }),
    },
    spec: {
      ...(holder === undefined ? {} : { holderIdentity: holder }),
      ...(acquireTime === undefined ? {} : { acquireTime }),
      ...(renewTime === undefined ? {} : { renewTime }),
      ...(duration === undefined ? {} : { leaseDurationSeconds: duration }),
    },
  };
}

function vm(
  options: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec?: VirtualMachine['spec'];
    status?: VirtualMachine['status'];
    deleting?: boolean;
  } = {},
): VirtualMachine {
  return {
    metadata: {
      name: 'devpool-1',
      labels: { 'corral.dev/vdi-pool': 'devpool', ...options.labels },
      ...(options.annotations ? { annotations: options.annotations } : {}),
      ...(options.deleting ? { deletionTimestamp: '2026-07-02T12:29:00Z' } : {}),
    },
    spec: options.spec ?? { runStrategy: 'Halted' },
    ...(options.status ? { status: options.status } : {}),
  };
}

const presentedTo = (identity: string) => ({
  labels: { 'corral.dev/vdi-assigned-to': 'alice_example.com' },
  annotations: {
    'corral.dev/vdi-assigned-to': identity,
    'corral.dev/vdi-claimed-at': '2026-07-02T12:00:00Z',
  },
});
const stopped = { spec: { runStrategy: 'Halted' as const }, status: { printableStatus: 'Stopped' } };
const runningVm = {
  spec: { runStrategy: 'Always' as const },
  status: { printableStatus: 'Running', ready: true },
};
const legacyTo = (user: string) => ({
  labels: { 'corral.dev/vdi-assigned-to': user },
  annotations: { 'corral.dev/vdi-claimed-at': '2026-07-02T11:00:00Z' },
  spec: { running: true },
});
const liveRenew = '2026-07-02T12:10:00.123456Z';

describe('classifyMember', () => {
  it.each<[string, Omit<MemberFacts, 'now'>, MemberClassification]>([
    [
      'a member with no Lease and no assignment is free',
      { vm: vm(), identity: alice },
      { kind: 'free', member: 'devpool-1' },
    ],
    [
      'a live Lease of the caller is held by the caller, with its session and times',
      {
        vm: vm({ ...presentedTo(alice), ...runningVm }),
        lease: lease({
          holder: alice,
          acquireTime: '2026-07-02T12:00:00.000000Z',
          renewTime: liveRenew,
          duration: 3600,
          sessionId: '5f0c9a',
        }),
        identity: alice,
      },
      {
        kind: 'held-by-caller',
        member: 'devpool-1',
        holder: alice,
        sessionId: '5f0c9a',
        acquireTime: new Date('2026-07-02T12:00:00Z'),
        renewTime: new Date('2026-07-02T12:10:00.123Z'),
        expiresAt: new Date('2026-07-02T13:10:00.123Z'),
        resourceVersion: '4711',
      },
    ],
    [
      'a never-renewed Lease of the caller expires an hour after its acquire time',
      {
        vm: vm(),
        lease: lease({ holder: alice, acquireTime: '2026-07-02T12:00:00.000000Z' }),
        identity: alice,
      },
      {
        kind: 'held-by-caller',
        member: 'devpool-1',
        holder: alice,
        acquireTime: new Date('2026-07-02T12:00:00Z'),
        expiresAt: new Date('2026-07-02T13:00:00Z'),
        resourceVersion: '4711',
      },
    ],
    [
      'a live Lease of someone else is held by other',
      { vm: vm(), lease: lease({ holder: 'bob', renewTime: liveRenew, duration: 3600 }), identity: alice },
      {
        kind: 'held-by-other',
        member: 'devpool-1',
        holder: 'bob',
        expiresAt: new Date('2026-07-02T13:10:00.123Z'),
      },
    ],
    [
      'a Lease still binds at the very instant it expires',
      {
        vm: vm(),
        lease: lease({ holder: 'bob', renewTime: '2026-07-02T11:30:00.000000Z' }),
        identity: alice,
      },
      { kind: 'held-by-other', member: 'devpool-1', holder: 'bob', expiresAt: now },
    ],
    [
      'a Lease one millisecond past its expiry is stale and names its previous holder',
      {
        vm: vm(),
        lease: lease({ holder: 'bob', renewTime: '2026-07-02T11:29:59.999000Z' }),
        identity: alice,
      },
      {
        kind: 'stale',
        member: 'devpool-1',
        reason: 'expired',
        previousHolder: 'bob',
        expiredAt: new Date('2026-07-02T12:29:59.999Z'),
        resourceVersion: '4711',
      },
    ],
    [
      'an expired Lease of the caller is stale too',
      {
        vm: vm({ ...presentedTo(alice), ...runningVm }),
        lease: lease({ holder: alice, renewTime: '2026-07-02T12:00:00.000000Z', duration: 60 }),
        identity: alice,
      },
      {
        kind: 'stale',
        member: 'devpool-1',
        reason: 'expired',
        previousHolder: alice,
        expiredAt: new Date('2026-07-02T12:01:00Z'),
        resourceVersion: '4711',
      },
    ],
    [
      'the renew time counts over the acquire time',
      {
        vm: vm(),
        lease: lease({ holder: 'bob', acquireTime: '2026-07-02T09:00:00.000000Z', renewTime: liveRenew }),
        identity: alice,
      },
      {
        kind: 'held-by-other',
        member: 'devpool-1',
        holder: 'bob',
        expiresAt: new Date('2026-07-02T13:10:00.123Z'),
      },
    ],
    [
      'a Lease without a holder is stale',
      { vm: vm(), lease: lease({ renewTime: liveRenew }), identity: alice },
      { kind: 'stale', member: 'devpool-1', reason: 'no-holder', resourceVersion: '4711' },
    ],
    [
      'a Lease with an empty holder is stale',
      { vm: vm(), lease: lease({ holder: '', renewTime: liveRenew }), identity: alice },
      { kind: 'stale', member: 'devpool-1', reason: 'no-holder', resourceVersion: '4711' },
    ],
    [
      'a Lease without any time is stale',
      { vm: vm(), lease: lease({ holder: 'bob' }), identity: alice },
      {
        kind: 'stale',
        member: 'devpool-1',
        reason: 'expired',
        previousHolder: 'bob',
        resourceVersion: '4711',
      },
    ],
    [
      'a Lease whose time cannot be read is stale',
      { vm: vm(), lease: lease({ holder: 'bob', renewTime: 'yesterday' }), identity: alice },
      {
        kind: 'stale',
        member: 'devpool-1',
        reason: 'expired',
        previousHolder: 'bob',
        resourceVersion: '4711',
      },
    ],
    [
      'a Lease wins over a v0.6.0 label, as while a member is being adopted',
      {
        vm: vm(legacyTo('alice')),
        lease: lease({ holder: 'alice', renewTime: liveRenew }),
        identity: 'alice',
      },
      {
        kind: 'held-by-caller',
        member: 'devpool-1',
        holder: 'alice',
        renewTime: new Date('2026-07-02T12:10:00.123Z'),
        expiresAt: new Date('2026-07-02T13:10:00.123Z'),
        resourceVersion: '4711',
      },
    ],
    [
      'a live Lease of someone else wins over the caller in the presentation annotation',
      {
        vm: vm({ ...presentedTo(alice), ...runningVm }),
        lease: lease({ holder: 'bob', renewTime: liveRenew }),
        identity: alice,
      },
      {
        kind: 'held-by-other',
        member: 'devpool-1',
        holder: 'bob',
        expiresAt: new Date('2026-07-02T13:10:00.123Z'),
      },
    ],
    [
      'a v0.6.0 label equal to the identity is adoptable',
      { vm: vm(legacyTo('alice')), identity: 'alice' },
      { kind: 'legacy-adoptable', member: 'devpool-1', user: 'alice', claimedAt: '2026-07-02T11:00:00Z' },
    ],
    [
      'a v0.6.0 label is not adoptable by a longer login of the same person',
      { vm: vm(legacyTo('alice')), identity: alice },
      { kind: 'legacy-held-by-other', member: 'devpool-1', user: 'alice', claimedAt: '2026-07-02T11:00:00Z' },
    ],
    [
      'a v0.6.0 label of another user is held by other',
      { vm: vm(legacyTo('bob')), identity: 'alice' },
      { kind: 'legacy-held-by-other', member: 'devpool-1', user: 'bob', claimedAt: '2026-07-02T11:00:00Z' },
    ],
    [
      'a v0.6.0 label on a stopped member still holds it',
      { vm: vm({ labels: { 'corral.dev/vdi-assigned-to': 'bob' }, ...stopped }), identity: 'alice' },
      { kind: 'legacy-held-by-other', member: 'devpool-1', user: 'bob' },
    ],
    [
      'a running member presented to the caller without a Lease can be claimed back',
      { vm: vm({ ...presentedTo(alice), ...runningVm }), identity: alice },
      { kind: 'orphan-adoptable', member: 'devpool-1', holder: alice },
    ],
    [
      'a running member presented to someone else without a Lease is not handed out',
      { vm: vm({ ...presentedTo('bob@example.com'), ...runningVm }), identity: alice },
      { kind: 'orphan-held-by-other', member: 'devpool-1', holder: 'bob@example.com' },
    ],
    [
      'a stopped member presented to someone else without a Lease is free',
      { vm: vm({ ...presentedTo('bob@example.com'), ...stopped }), identity: alice },
      { kind: 'free', member: 'devpool-1' },
    ],
    [
      'a stopped member on spec.running presented without a Lease is free',
      {
        vm: vm({
          ...presentedTo('bob@example.com'),
          spec: { running: false },
          status: { printableStatus: 'Stopped' },
        }),
        identity: alice,
      },
      { kind: 'free', member: 'devpool-1' },
    ],
    [
      'a member still stopping is not free',
      {
        vm: vm({
          ...presentedTo('bob@example.com'),
          spec: { runStrategy: 'Halted' },
          status: { printableStatus: 'Stopping' },
        }),
        identity: alice,
      },
      { kind: 'orphan-held-by-other', member: 'devpool-1', holder: 'bob@example.com' },
    ],
    [
      'a stopped member with a start request pending is not free',
      {
        vm: vm({
          ...presentedTo('bob@example.com'),
          spec: { runStrategy: 'Manual' },
          status: { printableStatus: 'Stopped', stateChangeRequests: [{ action: 'Start' }] },
        }),
        identity: alice,
      },
      { kind: 'orphan-held-by-other', member: 'devpool-1', holder: 'bob@example.com' },
    ],
    [
      'a stopped member whose run strategy asks it to run is not free',
      {
        vm: vm({
          ...presentedTo('bob@example.com'),
          spec: { runStrategy: 'Always' },
          status: { printableStatus: 'Stopped' },
        }),
        identity: alice,
      },
      { kind: 'orphan-held-by-other', member: 'devpool-1', holder: 'bob@example.com' },
    ],
    [
      'a presented member that KubeVirt has not reported on is not free',
      { vm: vm({ ...presentedTo('bob@example.com'), spec: { runStrategy: 'Halted' } }), identity: alice },
      { kind: 'orphan-held-by-other', member: 'devpool-1', holder: 'bob@example.com' },
    ],
    [
      'a member being deleted is unavailable, even to the holder of its Lease',
      { vm: vm({ deleting: true }), lease: lease({ holder: alice, renewTime: liveRenew }), identity: alice },
      { kind: 'unavailable', member: 'devpool-1', reason: 'deleting' },
    ],
    [
      'a member being deleted without a Lease is unavailable',
      { vm: vm({ deleting: true }), identity: alice },
      { kind: 'unavailable', member: 'devpool-1', reason: 'deleting' },
    ],
  ])('%s', (_case, facts, expected) => {
    expect(classifyMember({ ...facts, now })).toEqual(expected);
  });

  it.each<[string, MemberFacts, RegExp]>([
    ['an empty identity', { vm: vm(), identity: '', now }, /identity is empty/],
    ['an invalid date', { vm: vm(), identity: alice, now: new Date(Number.NaN) }, /not a valid Date/],
    ['a VM without a name', { vm: { metadata: {}, spec: {} }, identity: alice, now }, /no metadata.name/],
    [
      'the Lease of another member',
      { vm: vm(), lease: lease({ member: 'devpool-2', holder: 'bob' }), identity: alice, now },
      /pass the Lease named "corral-vdi-devpool-1"/,
    ],
    [
      'a Lease without a resourceVersion',
      {
        vm: vm(),
        lease: { metadata: { name: 'corral-vdi-devpool-1' }, spec: { holderIdentity: 'bob' } },
        identity: alice,
        now,
      },
      /as read from the cluster/,
    ],
  ])('rejects %s with INVALID_INPUT', (_case, facts, message) => {
    const error = thrownBy(() => classifyMember(facts));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});

describe('classifyMember on the v0.6.0 fixtures', () => {
  it.each<[string, string, MemberClassification['kind']]>([
    ['legacypool-1', 'alice', 'legacy-adoptable'],
    ['legacypool-1', 'alice@example.com', 'legacy-held-by-other'],
    ['legacypool-1', 'bob', 'legacy-held-by-other'],
    ['legacypool-2', 'alice', 'free'],
    ['legacypool-2', 'alice@example.com', 'free'],
    ['legacypool-3', 'bob', 'legacy-adoptable'],
    ['legacypool-3', 'alice', 'legacy-held-by-other'],
    ['legacypool-4', 'carol', 'legacy-adoptable'],
    ['legacypool-4', 'alice', 'legacy-held-by-other'],
  ])('classifies %s for %j as %s', (name, identity, kind) => {
    expect(classifyMember({ vm: loadV060Fixture(name), identity, now }).kind).toBe(kind);
  });

  it('reports the v0.6.0 user and claim time of an adoptable member', () => {
    expect(classifyMember({ vm: loadV060Fixture('legacypool-1'), identity: 'alice', now })).toEqual({
      kind: 'legacy-adoptable',
      member: 'legacypool-1',
      user: 'alice',
      claimedAt: '2026-07-02T12:00:00Z',
    });
  });

  it('lets the Lease of the first claim decide once an adoption created it', () => {
    const adopted = lease({ member: 'legacypool-1', holder: 'alice', renewTime: liveRenew });
    expect(
      classifyMember({ vm: loadV060Fixture('legacypool-1'), lease: adopted, identity: 'alice', now }).kind,
    ).toBe('held-by-caller');
    expect(
      classifyMember({ vm: loadV060Fixture('legacypool-1'), lease: adopted, identity: 'bob', now }).kind,
    ).toBe('held-by-other');
  });
});

const identities = ['alice', 'alice@example.com', 'bob', 'alice_example.com'];
const times = [
  undefined,
  'garbage',
  '2026-07-02T10:00:00.000000Z',
  '2026-07-02T11:29:59.999999Z',
  '2026-07-02T11:30:00.000000Z',
  '2026-07-02T12:29:00.000000Z',
  '2026-07-02T12:31:00.000000Z',
];
const anyLease = fc.record({
  holder: fc.option(fc.constantFrom('', ...identities), { nil: undefined }),
  acquireTime: fc.constantFrom(...times),
  renewTime: fc.constantFrom(...times),
  duration: fc.option(fc.constantFrom(1, 60, 3600, 86_400), { nil: undefined }),
  sessionId: fc.option(fc.constantFrom('5f0c9a', ''), { nil: undefined }),
});
const anyVm = fc
  .record({
    legacyLabel: fc.option(fc.constantFrom('', ...identities), { nil: undefined }),
    presented: fc.option(fc.constantFrom('', ...identities), { nil: undefined }),
    spec: fc.constantFrom<VirtualMachine['spec']>(
      {},
      { running: true },
      { running: false },
      { runStrategy: 'Halted' },
      { runStrategy: 'Always' },
      { runStrategy: 'Manual' },
    ),
    status: fc.option(fc.constantFrom('Stopped', 'Running', 'Stopping', 'Starting'), { nil: undefined }),
    deleting: fc.boolean(),
  })
  .map(({ legacyLabel, presented, spec, status, deleting }) =>
    vm({
      labels: legacyLabel === undefined ? {} : { 'corral.dev/vdi-assigned-to': legacyLabel },
      annotations: presented === undefined ? {} : { 'corral.dev/vdi-assigned-to': presented },
      spec,
      ...(status === undefined ? {} : { status: { printableStatus: status } }),
      deleting,
    }),
  );
const kinds: readonly MemberClassification['kind'][] = [
  'free',
  'held-by-caller',
  'held-by-other',
  'stale',
  'legacy-adoptable',
  'legacy-held-by-other',
  'orphan-adoptable',
  'orphan-held-by-other',
  'unavailable',
];

describe('classifyMember properties', () => {
  it('classifies every member, with or without a Lease, into one of its kinds', () => {
    fc.assert(
      fc.property(
        anyVm,
        fc.option(anyLease, { nil: undefined }),
        fc.constantFrom(...identities),
        (member, shape, identity) => {
          const state = classifyMember({ vm: member, lease: shape && lease(shape), identity, now });
          expect(kinds).toContain(state.kind);
          expect(state.member).toBe('devpool-1');
        },
      ),
    );
  });

  it('never calls a member with a live Lease of someone else free or adoptable', () => {
    fc.assert(
      fc.property(anyVm, anyLease, fc.constantFrom(...identities), (member, shape, identity) => {
        const claim = lease(shape);
        fc.pre(!!shape.holder && shape.holder !== identity && !isLeaseExpired(claim, now));
        const { kind } = classifyMember({ vm: member, lease: claim, identity, now });
        expect(['held-by-other', 'unavailable']).toContain(kind);
      }),
    );
  });

  it('calls a member with a Lease stale exactly when the Lease has expired or names no holder', () => {
    fc.assert(
      fc.property(anyLease, fc.constantFrom(...identities), (shape, identity) => {
        const claim = lease(shape);
        const { kind } = classifyMember({ vm: vm(), lease: claim, identity, now });
        expect(kind === 'stale').toBe(!shape.holder || isLeaseExpired(claim, now));
      }),
    );
  });
});

describe('leaseExpiresAt and isLeaseExpired', () => {
  it.each<[string, LeaseShape, string | undefined]>([
    [
      'renew time plus duration',
      { renewTime: '2026-07-02T12:00:00.000000Z', duration: 60 },
      '2026-07-02T12:01:00.000Z',
    ],
    [
      'acquire time when never renewed',
      { acquireTime: '2026-07-02T12:00:00.000000Z', duration: 60 },
      '2026-07-02T12:01:00.000Z',
    ],
    [
      'one hour when the duration is unset',
      { renewTime: '2026-07-02T12:00:00.000000Z' },
      '2026-07-02T13:00:00.000Z',
    ],
    [
      'the acquire time when the renew time cannot be read',
      { acquireTime: '2026-07-02T12:00:00Z', renewTime: 'x' },
      '2026-07-02T13:00:00.000Z',
    ],
    ['nothing without a time', { holder: 'bob' }, undefined],
  ])('computes the expiry from the %s', (_case, shape, iso) => {
    expect(leaseExpiresAt(lease(shape))?.toISOString()).toBe(iso);
  });

  it.each<[string, LeaseShape, boolean]>([
    ['a Lease before its expiry', { renewTime: '2026-07-02T12:00:00Z', duration: 1801 }, false],
    ['a Lease at its expiry', { renewTime: '2026-07-02T12:00:00Z', duration: 1800 }, false],
    ['a Lease past its expiry', { renewTime: '2026-07-02T12:00:00Z', duration: 1799 }, true],
    ['a Lease without a time', {}, true],
  ])('judges %s expired: %s', (_case, shape, expired) => {
    expect(isLeaseExpired(lease(shape), now)).toBe(expired);
  });
});
