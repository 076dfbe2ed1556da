import { describe, expect, it } from 'vitest';
import { isTakeUnderWay, readClaimMarks, shownHolder } from '../../../src/claims/claim-liveness.js';
import { describeDesktop } from '../../../src/claims/desktop-view.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { RunStrategy, VirtualMachine } from '../../../src/kubevirt-types.js';
import { countPoolMembers } from '../../../src/metrics/count-pool-members.js';
import { describePoolStatus } from '../../../src/pool-status/pool-status.js';
import { describePools } from '../../../src/pools/pool-view.js';
import { leaseOf, member, now } from './member-fixtures.js';

// alice's claim wrote the Lease of devpool-1 (session s-new) while the last holder's guest still goes down
const taking = leaseOf('devpool-1', { holder: 'alice', sessionId: 's-new' });
const stopping = member('devpool-1', { power: 'stopping' });

function withAnnotation(lease: LeaseObject, key: string, value: string): LeaseObject {
  return {
    ...lease,
    metadata: { ...lease.metadata, annotations: { ...lease.metadata.annotations, [key]: value } },
  };
}

describe('a claim Lease whose take is still under way', () => {
  it('is not a claim while its member goes down and does not show its session', () => {
    expect(isTakeUnderWay(stopping, taking)).toBe(true);
    expect(shownHolder({ member: stopping, lease: taking, now })).toBeUndefined();
    // an instance of an earlier run still there is going down too, whatever the power reads
    const leftover = { ...member('devpool-1', { power: 'stopped' }), previousInstance: true };
    expect(shownHolder({ member: leftover, lease: taking, now })).toBeUndefined();
  });

  it('is a claim once the member is down, or shows the session, or a release or a takeover marked it', () => {
    expect(shownHolder({ member: member('devpool-1'), lease: taking, now })).toBe('alice');
    const presented = member('devpool-1', { power: 'stopping', holder: 'alice', presentedSession: 's-new' });
    expect(shownHolder({ member: presented, lease: taking, now })).toBe('alice');
    const releasing = leaseOf('devpool-1', { holder: 'alice', sessionId: 's-new', releasing: 's-new' });
    expect(shownHolder({ member: stopping, lease: releasing, now })).toBe('alice');
    const resetDue = withAnnotation(taking, 'corral.dev/vdi-reset-due', 's-new');
    expect(shownHolder({ member: stopping, lease: resetDue, now })).toBe('alice');
    // a Lease without a session is an older claim's, never a take
    expect(shownHolder({ member: stopping, lease: leaseOf('devpool-1', { holder: 'alice' }), now })).toBe(
      'alice',
    );
  });

  it('counts in the metrics as neither claimed nor free', () => {
    const [counts] = countPoolMembers({
      namespace: 'corral-vms',
      members: [
        stopping,
        member('devpool-2', { power: 'running', holder: 'bob', presentedSession: 's-bob' }),
      ],
      leases: [taking, leaseOf('devpool-2', { holder: 'bob', sessionId: 's-bob' })],
      ctSizes: new Map(),
      now,
    });
    expect(counts).toMatchObject({ desired: 2, free: 0, claimed: 1 });
  });

  it("shows no holder in the pool's status and no owner in the desktop view", () => {
    const status = describePoolStatus({
      kind: 'vm',
      namespace: 'corral-vms',
      pool: 'devpool',
      members: [stopping],
      leases: [taking],
      marked: new Set(),
      minReady: undefined,
      waiters: 0,
      now,
    });
    expect(status.members[0]).toMatchObject({ name: 'devpool-1', holder: null, session: 'none' });
    expect(describeDesktop(stopping, taking)).toMatchObject({ owner: undefined, sessionId: undefined });
    expect(describeDesktop(member('devpool-1'), taking)).toMatchObject({
      owner: 'alice',
      sessionId: 's-new',
    });
  });

  it('reads as taking in the pool view, from the VM asked to stop while KubeVirt still shows its instance', () => {
    const vm = (printableStatus: string, runStrategy: RunStrategy = 'Halted'): VirtualMachine => ({
      metadata: { name: 'devpool-1', labels: { 'corral.dev/vdi-pool': 'devpool' } },
      spec: { runStrategy },
      status: { printableStatus },
    });
    expect(readClaimMarks(vm('Stopping')).power).toBe('stopping');
    expect(readClaimMarks(vm('Running')).power).toBe('stopping');
    expect(readClaimMarks(vm('Running', 'Manual')).power).toBe('unknown');
    expect(readClaimMarks(vm('Stopped')).power).toBe('stopped');
    const [goingDown] = describePools({
      namespace: 'corral-vms',
      vms: [vm('Stopping')],
      leases: [taking],
      now,
    });
    expect(goingDown?.members[0]?.state).toEqual({ kind: 'taking', holder: 'alice' });
    expect(goingDown?.counts).toEqual({ members: 1, free: 0, claimed: 0 });
    const [down] = describePools({ namespace: 'corral-vms', vms: [vm('Stopped')], leases: [taking], now });
    expect(down?.members[0]?.state).toMatchObject({ kind: 'claimed', holder: 'alice' });
  });
});
