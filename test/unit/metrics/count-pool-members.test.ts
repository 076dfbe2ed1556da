import { describe, expect, it } from 'vitest';
import { countPoolMembers } from '../../../src/metrics/count-pool-members.js';
import { leaseOf, member, now } from '../claims/member-fixtures.js';

describe('countPoolMembers', () => {
  it('counts each member once per state it is in, by the claim rule', () => {
    const counts = countPoolMembers({
      namespace: 'corral-vms',
      members: [
        member('devpool-1', { power: 'running' }),
        member('devpool-2', { power: 'running' }),
        member('devpool-3', { power: 'failed' }),
        member('devpool-4', { deleting: true }),
        member('devpool-5'),
        // a v0.6.0 assignment: no Lease, the label names its user
        member('devpool-6', { label: 'carol', power: 'running' }),
      ],
      leases: [
        leaseOf('devpool-1', { holder: 'alice' }),
        leaseOf('devpool-5', { holder: 'bob', expired: true }),
      ],
      ctSizes: new Map(),
      now,
    });
    expect(counts).toEqual([
      {
        kind: 'vm',
        namespace: 'corral-vms',
        pool: 'devpool',
        desired: 5,
        free: 3,
        claimed: 2,
        running: 3,
        failed: 1,
      },
    ]);
  });

  it('takes a container pool’s desired size from its spec, also before it has a member', () => {
    const box = { ...member('box-1', { power: 'running' }), kind: 'ct' as const, pool: 'box' };
    const counts = countPoolMembers({
      namespace: 'corral-vms',
      members: [box],
      leases: [],
      ctSizes: new Map([
        ['box', 3],
        ['empty', 2],
      ]),
      now,
    });
    expect(counts).toEqual([
      {
        kind: 'ct',
        namespace: 'corral-vms',
        pool: 'box',
        desired: 3,
        free: 1,
        claimed: 0,
        running: 1,
        failed: 0,
      },
      {
        kind: 'ct',
        namespace: 'corral-vms',
        pool: 'empty',
        desired: 2,
        free: 0,
        claimed: 0,
        running: 0,
        failed: 0,
      },
    ]);
  });

  it('keeps a VM pool and a container pool of the same name apart', () => {
    const counts = countPoolMembers({
      namespace: 'corral-vms',
      members: [member('devpool-1'), { ...member('devpool-2'), kind: 'ct' }],
      leases: [],
      ctSizes: new Map(),
      now,
    });
    expect(counts.map(({ kind, pool, desired }) => `${kind}/${pool} ${desired}`)).toEqual([
      'vm/devpool 1',
      'ct/devpool 0',
    ]);
  });
});
