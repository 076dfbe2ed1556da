import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { planWaitlist } from '../../../src/waitlist/plan-waitlist.js';
import { waiterLeaseName } from '../../../src/waitlist/waitlist-keys.js';
import { leaseOf, member, now } from '../claims/member-fixtures.js';

/** The waiter Lease of `identity`, queued `secondsAgo` before {@link now} and renewed `renewedAgo` seconds before it. */
function waiter(identity: string, secondsAgo: number, renewedAgo = 5, kind: 'vm' | 'ct' = 'vm'): LeaseObject {
  const enqueued = new Date(now.getTime() - secondsAgo * 1000).toISOString();
  return {
    metadata: {
      name: waiterLeaseName(kind, 'devpool', identity),
      namespace: 'corral-vms',
      labels: { 'corral.dev/vdi-pool': 'devpool', 'corral.dev/vdi-kind': kind, 'corral.dev/vdi-waiter': 'h' },
      annotations: { 'corral.dev/vdi-enqueued-at': enqueued },
    },
    spec: {
      holderIdentity: identity,
      acquireTime: enqueued,
      renewTime: new Date(now.getTime() - renewedAgo * 1000).toISOString(),
      leaseDurationSeconds: 30,
    },
  };
}

const pool = ['devpool-1', 'devpool-2', 'devpool-3'].map((name) => member(name));

describe('planWaitlist', () => {
  it('orders live waiters by enqueue time and gives each its position', () => {
    const plan = planWaitlist({
      kind: 'vm',
      members: pool,
      leases: [waiter('carol', 10), waiter('alice', 30), waiter('bob', 20)],
      identity: 'bob',
      now,
    });
    expect(plan.queue.map((entry) => entry.identity)).toEqual(['alice', 'bob', 'carol']);
    expect(plan.position).toBe(2);
  });

  it('lets the first k waiters take the k free members, and nobody else', () => {
    const leases = [
      leaseOf('devpool-2', { holder: 'dave' }),
      waiter('alice', 30),
      waiter('bob', 20),
      waiter('carol', 10),
    ];
    const as = (identity: string) => planWaitlist({ kind: 'vm', members: pool, leases, identity, now });
    expect(as('alice').free).toEqual(['devpool-1', 'devpool-3']);
    expect([as('alice').mayTake, as('bob').mayTake, as('carol').mayTake, as('erin').mayTake]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect([...as('bob').reserved]).toEqual(['devpool-1']);
    expect([...as('erin').reserved]).toEqual(['devpool-1', 'devpool-3']);
  });

  it('leaves a claimant who does not wait only the members beyond the queue', () => {
    const plan = planWaitlist({
      kind: 'vm',
      members: pool,
      leases: [waiter('alice', 30)],
      identity: 'erin',
      now,
    });
    expect(plan).toMatchObject({ position: undefined, mayTake: true, reserved: new Set(['devpool-1']) });
  });

  it('drops a waiter whose Lease ran out, so it holds nobody back', () => {
    const dead = waiter('alice', 300, 31);
    const plan = planWaitlist({
      kind: 'vm',
      members: [member('devpool-1')],
      leases: [dead, waiter('bob', 20)],
      identity: 'bob',
      now,
    });
    expect(plan.expired).toEqual([dead]);
    expect(plan).toMatchObject({ position: 1, mayTake: true });
  });

  it('does not count a waiter who already holds a member of the pool, and says the identity holds one', () => {
    const leases = [leaseOf('devpool-1', { holder: 'alice' }), waiter('alice', 30), waiter('bob', 20)];
    const plan = planWaitlist({ kind: 'vm', members: pool, leases, identity: 'alice', now });
    expect(plan).toMatchObject({ position: undefined, holding: true });
    expect(plan.queue.map((entry) => entry.identity)).toEqual(['bob']);
  });

  it('ignores the waiters of a pool of another kind with the same name', () => {
    const plan = planWaitlist({
      kind: 'vm',
      members: [member('devpool-1')],
      leases: [waiter('alice', 30, 5, 'ct')],
      identity: 'erin',
      now,
    });
    expect(plan).toMatchObject({ queue: [], mayTake: true });
  });

  it('does not count a member still going down as free', () => {
    const plan = planWaitlist({
      kind: 'vm',
      members: [member('devpool-1', { power: 'stopping' })],
      leases: [waiter('alice', 30)],
      identity: 'alice',
      now,
    });
    expect(plan).toMatchObject({ free: [], mayTake: false, position: 1 });
  });

  it('never leaves one free member to two identities, however the queue and the pool look', () => {
    const identities = ['alice', 'bob', 'carol', 'dave', 'erin'];
    fc.assert(
      fc.property(
        fc.subarray(identities),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
        (waiting, held) => {
          const members = held.map((_, index) => member(`devpool-${index + 1}`));
          const leases = [
            ...held.flatMap((isHeld, index) =>
              isHeld ? [leaseOf(`devpool-${index + 1}`, { holder: 'zed' })] : [],
            ),
            ...waiting.map((identity, index) => waiter(identity, 100 - index)),
          ];
          const plans = identities.map((identity) =>
            planWaitlist({ kind: 'vm', members, leases, identity, now }),
          );
          const free = held.filter((isHeld) => !isHeld).length;
          // every waiter a member is left to is ahead of every waiter none is left to
          const admitted = plans.filter((plan) => plan.position !== undefined && plan.mayTake).length;
          expect(admitted).toBe(Math.min(free, waiting.length));
          for (const plan of plans) {
            if (plan.position !== undefined) expect(plan.mayTake).toBe(plan.position <= free);
            else expect(plan.mayTake).toBe(free > waiting.length);
          }
        },
      ),
    );
  });
});
