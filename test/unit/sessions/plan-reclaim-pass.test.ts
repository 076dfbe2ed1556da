import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { leaseNameFor } from '../../../src/lease-name.js';
import { claimKeyOf, claimKindOf } from '../../../src/sessions/claim-key.js';
import { type ConsoleState, sessionFactsOf } from '../../../src/sessions/console-marks.js';
import { describeSession, planReclaim } from '../../../src/sessions/plan-reclaim.js';
import {
  planReclaimPass,
  type ReclaimPassInput,
  releaseStalledAfterMs,
} from '../../../src/sessions/plan-reclaim-pass.js';
import { planRenewal } from '../../../src/sessions/plan-renewal.js';

const minute = 60_000;
const t0 = Date.parse('2026-07-02T12:00:00.000Z');
const at = (minutes: number) => new Date(t0 + minutes * minute);
const micro = (minutes: number) => at(minutes).toISOString().replace('Z', '000Z');

function claim(
  member: string,
  options: {
    renewed?: number;
    connected?: number;
    disconnected?: number;
    name?: string;
    labelled?: boolean;
    holder?: string;
    releasing?: boolean;
    resetDue?: boolean;
  } = {},
): LeaseObject {
  const annotations: Record<string, string> = { 'corral.dev/vdi-session-id': `s-${member}` };
  if (options.releasing) annotations['corral.dev/vdi-releasing'] = `s-${member}`;
  if (options.resetDue) annotations['corral.dev/vdi-reset-due'] = `s-${member}`;
  if (options.connected !== undefined)
    annotations['corral.dev/vdi-connected-at'] = at(options.connected).toISOString();
  if (options.disconnected !== undefined)
    annotations['corral.dev/vdi-disconnected-at'] = at(options.disconnected).toISOString();
  return {
    metadata: {
      name: options.name ?? leaseNameFor(member),
      uid: `uid-${member}`,
      resourceVersion: '7',
      annotations,
      labels: {
        'corral.dev/vdi-pool': 'devpool',
        ...(options.labelled ? { 'corral.dev/vdi-member': member } : {}),
      },
    },
    spec: {
      holderIdentity: options.holder ?? 'alice@example.com',
      acquireTime: micro(0),
      renewTime: micro(options.renewed ?? 0),
      leaseDurationSeconds: 3600,
    },
  };
}

function consolesOf(lease: LeaseObject, state: Partial<ConsoleState>): ConsoleState {
  return {
    claim: claimKeyOf(lease),
    open: 0,
    connectedAt: undefined,
    disconnectedAt: undefined,
    version: 0,
    written: 0,
    ...state,
  };
}

const base = {
  consoles: new Map<string, ConsoleState>(),
  replicaId: 'broker-a',
  policy: { disconnectGraceMs: 15 * minute, maxSessionMs: 0 },
  processStartedAt: at(-60),
};

function stepOf(lease: LeaseObject, minutes: number, extra: Partial<ReclaimPassInput> = {}) {
  const plan = planReclaimPass({ ...base, leases: [lease], now: at(minutes), ...extra });
  return plan.steps[0];
}

describe('planReclaimPass', () => {
  const member = 'devpool-1';

  it.each<[string, LeaseObject, number, Partial<ReclaimPassInput>, object]>([
    ['keeps a live claim with nothing due', claim(member), 5, {}, { kind: 'keep', member }],
    [
      'renews a Lease a third of its duration old',
      claim(member),
      20,
      {},
      { kind: 'renew', member, marks: false },
    ],
    [
      'reclaims a desktop whose grace ran out since its last disconnect',
      claim(member, { renewed: 20, connected: 1, disconnected: 2 }),
      17,
      {},
      { kind: 'reclaim', member, reason: 'disconnect-grace' },
    ],
    [
      'reclaims rather than renews a claim past its maximum age',
      claim(member),
      30,
      { policy: { disconnectGraceMs: 0, maxSessionMs: 30 * minute } },
      { kind: 'reclaim', member, reason: 'max-duration' },
    ],
    [
      'skips a Lease that expired, so a pass never revives an ended claim',
      claim(member),
      61,
      {},
      { kind: 'skip', reason: 'expired' },
    ],
    [
      'skips a Lease whose release is under way rather than renew it',
      claim(member, { releasing: true }),
      6,
      { renewIntervalMs: 5 * minute },
      { kind: 'skip', reason: 'releasing' },
    ],
    [
      'resumes a release whose mark is as old as the bound: its process died half way',
      claim(member, { releasing: true, renewed: 3 }),
      3 + releaseStalledAfterMs / minute,
      {},
      { kind: 'resume', member },
    ],
    [
      'reclaims a Lease whose release stopped half way once the policy says so, which resumes that release',
      claim(member, { releasing: true, renewed: 20, connected: 1, disconnected: 2 }),
      17,
      {},
      { kind: 'reclaim', member, reason: 'disconnect-grace' },
    ],
    [
      'skips a Lease that is no member’s claim',
      claim(member, { name: 'kube-scheduler' }),
      5,
      {},
      { kind: 'skip', reason: 'not-a-claim' },
    ],
    [
      'skips a Lease whose member label names another member',
      claim(member, { name: leaseNameFor('devpool-2'), labelled: true }),
      5,
      {},
      { kind: 'skip', reason: 'not-a-claim' },
    ],
    [
      'places a Lease by its member label',
      claim('devpool-1', { labelled: true }),
      5,
      {},
      { kind: 'keep', member: 'devpool-1' },
    ],
  ])('%s', (_, lease, minutes, extra, expected) => {
    expect(stepOf(lease, minutes, extra)).toMatchObject(expected);
  });

  it('leaves the Lease a pool shrink or delete holds alone: it is no claim to renew or reclaim', () => {
    const removal = claim(member, { holder: 'corral-vdi/resize', renewed: 40 });
    expect(stepOf(removal, 41)).toEqual({ kind: 'skip', lease: removal, reason: 'not-a-claim' });
    expect(planReclaimPass({ ...base, leases: [removal], now: at(41) }).desktops).toBe(0);
  });

  it('marks a claim whose console marks an earlier write missed, and carries them with a renewal', () => {
    const lease = claim(member);
    const consoles = new Map([[member, consolesOf(lease, { open: 1, connectedAt: at(1), version: 1 })]]);
    expect(stepOf(lease, 5, { consoles })).toMatchObject({ kind: 'mark', member });
    expect(stepOf(lease, 20, { consoles })).toMatchObject({ kind: 'renew', member, marks: true });
  });

  it('keeps a desktop with a console open in this process past its recorded grace', () => {
    const lease = claim(member, { connected: 1, disconnected: 2 });
    const consoles = new Map([
      [member, consolesOf(lease, { open: 1, connectedAt: at(3), version: 2, written: 2 })],
    ]);
    expect(stepOf(lease, 19, { consoles })).toMatchObject({ kind: 'keep' });
    expect(stepOf(lease, 19)).toMatchObject({ kind: 'reclaim', reason: 'disconnect-grace' });
  });

  it('ignores the console state of an earlier claim of the member', () => {
    const lease = claim(member, { connected: 1, disconnected: 2 });
    const earlier = consolesOf(claim(member, { holder: 'bob@example.com' }), { open: 1, version: 1 });
    expect(stepOf(lease, 30, { consoles: new Map([[member, earlier]]) })).toMatchObject({
      kind: 'reclaim',
      reason: 'disconnect-grace',
    });
  });

  it('asks for the members only when a hashed Lease name needs them, and then places it', () => {
    const long = `devpool-${'x'.repeat(240)}`;
    const lease = claim(long);
    const first = planReclaimPass({ ...base, leases: [lease, claim(member)], now: at(5) });
    expect(first.needsMembers).toBe(true);
    expect(first.steps[0]).toMatchObject({ kind: 'skip', reason: 'unresolved' });
    expect(first.desktops).toBe(1);
    const second = planReclaimPass({ ...base, leases: [lease], now: at(5), members: [member, long] });
    expect(second).toMatchObject({
      needsMembers: false,
      desktops: 1,
      steps: [{ kind: 'keep', member: long }],
    });
  });

  it('asks for the members before it would renew, mark or leave a claim to its release, and not otherwise', () => {
    const due = (lease: LeaseObject, minutes: number) =>
      planReclaimPass({ ...base, leases: [lease], now: at(minutes) }).needsMembers;
    expect(due(claim(member), 5)).toBe(false);
    expect(due(claim(member), 25)).toBe(true);
    expect(due(claim(member, { releasing: true }), 5)).toBe(true);
    expect(due(claim(member, { connected: 1, disconnected: 2 }), 30)).toBe(false);
    expect(due(claim(member), 61)).toBe(false);
  });

  it('resumes a release whose member is gone or being deleted, and keeps no claim alive without its member', () => {
    const gone = { members: ['devpool-9'] };
    expect(stepOf(claim(member, { releasing: true }), 5, gone)).toMatchObject({ kind: 'resume', member });
    expect(
      stepOf(claim(member, { releasing: true }), 5, { members: [member], deleting: [member] }),
    ).toMatchObject({ kind: 'resume', member });
    expect(stepOf(claim(member, { releasing: true }), 5, { members: [member] })).toMatchObject({
      kind: 'skip',
      reason: 'releasing',
    });
    for (const minutes of [5, 25]) {
      expect(stepOf(claim(member), minutes, gone)).toMatchObject({ kind: 'skip', reason: 'member-gone' });
      expect(stepOf(claim(member), minutes, { members: [member] })).toMatchObject({
        kind: minutes === 5 ? 'keep' : 'renew',
      });
    }
    // a due reclaim goes first: it resets the member too, whatever is left of it
    expect(stepOf(claim(member, { connected: 1, disconnected: 2 }), 30, gone)).toMatchObject({
      kind: 'reclaim',
    });
    // an expired claim is never revived, member or not
    expect(stepOf(claim(member, { releasing: true }), 61, gone)).toMatchObject({
      kind: 'skip',
      reason: 'expired',
    });
    const plan = planReclaimPass({
      ...base,
      leases: [claim(member, { releasing: true })],
      now: at(5),
      ...gone,
    });
    expect(plan).toMatchObject({ desktops: 1, needsMembers: false });
  });

  it("finishes a takeover's reset whose member is gone, leaves one being deleted, and looks for the member first", () => {
    const resetDue = claim(member, { resetDue: true });
    expect(stepOf(resetDue, 5, { members: ['devpool-9'] })).toMatchObject({ kind: 'finish-reset', member });
    expect(stepOf(resetDue, 5, { members: [member], deleting: [member] })).toMatchObject({
      kind: 'skip',
      reason: 'member-gone',
    });
    expect(stepOf(resetDue, 5, { members: [member] })).toMatchObject({ kind: 'keep', member });
    // a claim with nothing else due asks for the members only while its reset is due
    expect(planReclaimPass({ ...base, leases: [resetDue], now: at(5) }).needsMembers).toBe(true);
    expect(planReclaimPass({ ...base, leases: [claim(member)], now: at(5) }).needsMembers).toBe(false);
    // a release under way, or an expired claim, is not a reset to finish
    const releasing = claim(member, { resetDue: true, releasing: true });
    expect(stepOf(releasing, 5, { members: ['devpool-9'] })).toMatchObject({ kind: 'resume' });
    expect(stepOf(resetDue, 61, { members: ['devpool-9'] })).toMatchObject({
      kind: 'skip',
      reason: 'expired',
    });
  });

  it('leaves a release to itself until its mark is as old as the bound, then resumes it, member or not', () => {
    const lease = claim(member, { releasing: true, renewed: 10 });
    const bound = 10 + releaseStalledAfterMs / minute;
    expect(releaseStalledAfterMs).toBeGreaterThan(4 * minute);
    for (const extra of [{ members: [member] }, {}]) {
      expect(stepOf(lease, bound - 1 / 60_000, extra)).toMatchObject({ kind: 'skip', reason: 'releasing' });
      expect(stepOf(lease, bound, extra)).toMatchObject({ kind: 'resume', member, lease });
    }
    // a resume needs no list of the members: it works whether the member stands or not
    expect(planReclaimPass({ ...base, leases: [lease], now: at(bound) })).toMatchObject({
      needsMembers: false,
      desktops: 1,
    });
    // the policy's reclaim goes first, and resumes the release the same way
    const idle = claim(member, { releasing: true, renewed: 10, connected: 1, disconnected: 2 });
    expect(stepOf(idle, bound)).toMatchObject({ kind: 'reclaim', reason: 'disconnect-grace' });
    // past the Lease's hour it binds nobody: never revived
    expect(stepOf(lease, 71)).toMatchObject({ kind: 'skip', reason: 'expired' });
  });

  it('agrees with planReclaim and planRenewal on every Lease, and counts the live claims', () => {
    const lease = fc.record({
      renewed: fc.integer({ min: 0, max: 120 }),
      connected: fc.option(fc.integer({ min: -10, max: 120 }), { nil: undefined }),
      disconnected: fc.option(fc.integer({ min: -10, max: 120 }), { nil: undefined }),
      open: fc.integer({ min: 0, max: 2 }),
      pending: fc.boolean(),
    });
    const input = fc.record({
      leases: fc.array(lease, { minLength: 1, maxLength: 6 }),
      now: fc.integer({ min: 0, max: 200 }),
      grace: fc.integer({ min: 0, max: 60 }),
      max: fc.integer({ min: 0, max: 180 }),
    });
    fc.assert(
      fc.property(input, ({ leases, now, grace, max }) => {
        const policy = { disconnectGraceMs: grace * minute, maxSessionMs: max * minute };
        const objects = leases.map((spec, index) => claim(`devpool-${index + 1}`, spec));
        const consoles = new Map(
          leases.map((spec, index) => {
            const object = objects[index] as LeaseObject;
            const version = spec.pending ? 1 : 0;
            return [
              `devpool-${index + 1}` as string,
              consolesOf(object, { open: spec.open, version }),
            ] as const;
          }),
        );
        const plan = planReclaimPass({ ...base, policy, consoles, leases: objects, now: at(now) });
        expect(plan.steps).toHaveLength(objects.length);
        expect(plan.needsMembers).toBe(
          plan.steps.some((step) => step.kind === 'renew' || step.kind === 'mark'),
        );
        let live = 0;
        plan.steps.forEach((step, index) => {
          const object = objects[index] as LeaseObject;
          const renewal = planRenewal(object, at(now));
          if (renewal.kind === 'expired') {
            expect(step).toMatchObject({ kind: 'skip', reason: 'expired' });
            return;
          }
          live += 1;
          const member = `devpool-${index + 1}`;
          const facts = sessionFactsOf(object, consoles.get(member), { ...base, now: at(now) });
          const reclaim = planReclaim(facts as NonNullable<typeof facts>, at(now), policy);
          if (reclaim.kind === 'reclaim') {
            const dueAt = describeSession(facts as NonNullable<typeof facts>, policy).reclaimAt;
            expect(step).toEqual({
              kind: 'reclaim',
              member,
              lease: object,
              reason: reclaim.reason,
              dueAt,
              notify: false,
            });
          } else if (renewal.kind === 'renew') {
            expect(step).toMatchObject({ kind: 'renew', member, marks: leases[index]?.pending });
          } else {
            expect(step).toMatchObject({ kind: leases[index]?.pending ? 'mark' : 'keep', member });
          }
        });
        expect(plan.desktops).toBe(live);
      }),
    );
  });
});

describe('claimKindOf', () => {
  it.each([
    ['ct', 'ct'],
    ['vm', 'vm'],
    ['pod', undefined],
    [undefined, undefined],
  ])('reads the kind label %s as %s', (label, kind) => {
    const lease = claim('devbox-1');
    lease.metadata.labels = { ...lease.metadata.labels, ...(label ? { 'corral.dev/vdi-kind': label } : {}) };
    expect(claimKindOf(lease)).toBe(kind);
  });
});

describe('planReclaimPass on a claim whose pool no longer lets its holder in', () => {
  const member = 'devpool-1';
  // the claim was let in with the group ml; the pool now lets in research only
  function recorded(groups: string, notEntitledAt?: number): LeaseObject {
    const lease = claim(member, { renewed: 5 });
    lease.metadata.annotations = {
      ...lease.metadata.annotations,
      'corral.dev/vdi-holder-groups': groups,
      ...(notEntitledAt === undefined
        ? {}
        : { 'corral.dev/vdi-not-entitled-at': at(notEntitledAt).toISOString() }),
    };
    return lease;
  }
  const research = new Map([['devpool', { allowedGroups: ['research'] }]]);
  const ml = new Map([['devpool', { allowedGroups: ['ml'] }]]);
  const members = { members: [member], deleting: [] };

  it('asks for the pools’ settings when a claim records its holder’s groups, or is marked', () => {
    expect(planReclaimPass({ ...base, leases: [recorded('["ml"]')], now: at(6) }).needsSettings).toBe(true);
    expect(planReclaimPass({ ...base, leases: [recorded('unchecked', 5)], now: at(6) }).needsSettings).toBe(
      true,
    );
    expect(planReclaimPass({ ...base, leases: [recorded('unchecked')], now: at(6) }).needsSettings).toBe(
      false,
    );
  });

  it('marks the claim the first time it sees the holder no longer let in, at now', () => {
    expect(stepOf(recorded('["ml"]'), 6, { settings: research, ...members })).toMatchObject({
      kind: 'entitlement',
      member,
      notEntitledAt: at(6),
    });
  });

  it('keeps a marked claim until the grace since the mark has passed, then reclaims it for not-entitled', () => {
    const lease = recorded('["ml"]', 6);
    expect(stepOf(lease, 20, { settings: research, ...members })).toMatchObject({ kind: 'keep' });
    expect(stepOf(lease, 21, { settings: research, ...members })).toMatchObject({
      kind: 'reclaim',
      reason: 'not-entitled',
      dueAt: at(21),
      notify: false,
    });
  });

  it('reports the reclaim instead on a notify pool, once', () => {
    const lease = recorded('["ml"]', 6);
    const notify = new Map([['devpool', { allowedGroups: ['research'], reclaimAction: 'notify' as const }]]);
    expect(stepOf(lease, 22, { settings: notify, ...members })).toMatchObject({
      kind: 'reclaim',
      reason: 'not-entitled',
      notify: true,
    });
    lease.metadata.annotations = {
      ...lease.metadata.annotations,
      'corral.dev/vdi-reclaim-notified': `not-entitled ${at(21).toISOString()}`,
    };
    expect(stepOf(lease, 22, { settings: notify, ...members })).toMatchObject({ kind: 'keep' });
  });

  it('clears the mark of a claim whose pool lets its holder in again', () => {
    expect(stepOf(recorded('["ml"]', 6), 10, { settings: ml, ...members })).toMatchObject({
      kind: 'entitlement',
      notEntitledAt: undefined,
    });
  });

  it('never judges an unchecked claim (an assign, a claim without groups) or one that records nothing', () => {
    const unrecorded = claim(member, { renewed: 5 });
    for (const lease of [recorded('unchecked'), unrecorded]) {
      expect(stepOf(lease, 10, { settings: research, ...members })).toMatchObject({ kind: 'keep' });
    }
  });

  it('leaves a claim whose release is under way to that release', () => {
    const lease = recorded('["ml"]');
    lease.metadata.annotations = { ...lease.metadata.annotations, 'corral.dev/vdi-releasing': `s-${member}` };
    expect(stepOf(lease, 6, { settings: research, ...members })).toMatchObject({
      kind: 'skip',
      reason: 'releasing',
    });
  });

  it('does not mark a claim before the pools’ settings are read', () => {
    expect(stepOf(recorded('["ml"]'), 6, members)).toMatchObject({ kind: 'keep' });
  });
});
