import { describe, expect, it } from 'vitest';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';
import { describePools } from '../../../src/pools/pool-view.js';

const now = new Date('2026-07-02T12:00:00Z');

function member(
  name: string,
  pool: string,
  extra: { labels?: Record<string, string>; annotations?: Record<string, string>; status?: string } = {},
): VirtualMachine {
  return {
    metadata: {
      name,
      labels: { 'corral.dev/vdi-pool': pool, ...extra.labels },
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: { runStrategy: 'Halted' },
    status: { printableStatus: extra.status ?? 'Stopped' },
  };
}

function lease(memberName: string, holder: string, renewTime: string): LeaseObject {
  return {
    metadata: { name: `corral-vdi-${memberName}`, resourceVersion: '7' },
    spec: {
      holderIdentity: holder,
      acquireTime: '2026-07-02T11:30:00.000000Z',
      renewTime,
      leaseDurationSeconds: 3600,
    },
  };
}

describe('describePools', () => {
  it('groups members by pool label, in natural order, with state and power', () => {
    const vms = [
      member('devpool-10', 'devpool'),
      member('devpool-2', 'devpool', { status: 'Running' }),
      member('devpool-1', 'devpool', { labels: { 'corral.dev/vdi-assigned-to': 'bob' } }),
      member('otherpool-1', 'otherpool', {
        labels: { 'corral.dev/vdi-ephemeral': 'true' },
        annotations: { 'corral.dev/vdi-source': 'golden' },
      }),
      { metadata: { name: 'not-a-member' }, spec: {} },
    ];
    const leases = [
      lease('devpool-2', 'alice@example.com', '2026-07-02T11:50:00.000000Z'),
      lease('devpool-10', 'carol', '2026-07-02T10:00:00.000000Z'),
    ];
    const pools = describePools({ namespace: 'corral-vms', vms, leases, now });

    expect(pools.map((pool) => pool.id)).toEqual(['vm/corral-vms/devpool', 'vm/corral-vms/otherpool']);
    const [devpool, otherpool] = pools;
    expect(devpool?.members.map((entry) => [entry.name, entry.state, entry.power])).toEqual([
      ['devpool-1', { kind: 'legacy-assigned', user: 'bob' }, 'Stopped'],
      [
        'devpool-2',
        {
          kind: 'claimed',
          holder: 'alice@example.com',
          since: '2026-07-02T11:30:00.000Z',
          expiresAt: '2026-07-02T12:50:00.000Z',
        },
        'Running',
      ],
      ['devpool-10', { kind: 'free' }, 'Stopped'],
    ]);
    expect(devpool?.counts).toEqual({ members: 3, free: 1, claimed: 2 });
    expect(otherpool?.members[0]).toMatchObject({
      name: 'otherpool-1',
      ephemeral: true,
      source: 'golden',
      desktopId: 'vm/corral-vms/otherpool-1',
    });
  });

  it('shows a running member whose Lease is gone as still claimed by the identity on the VM', () => {
    const vm = member('devpool-1', 'devpool', {
      annotations: {
        'corral.dev/vdi-assigned-to': 'alice',
        'corral.dev/vdi-claimed-at': '2026-07-02T11:00:00Z',
      },
      status: 'Running',
    });
    const [pool] = describePools({ namespace: 'ns', vms: [vm], leases: [], now });
    expect(pool?.members[0]?.state).toEqual({
      kind: 'claimed',
      holder: 'alice',
      since: '2026-07-02T11:00:00.000Z',
      leaseMissing: true,
    });
  });

  it('shows a member being deleted as deleting, and one without status as Unknown power', () => {
    const vm: VirtualMachine = {
      metadata: {
        name: 'devpool-1',
        labels: { 'corral.dev/vdi-pool': 'devpool' },
        deletionTimestamp: '2026-07-02T11:59:00Z',
      },
      spec: {},
    };
    const [pool] = describePools({ namespace: 'ns', vms: [vm], leases: [], now });
    expect(pool?.members[0]).toMatchObject({ state: { kind: 'deleting' }, power: 'Unknown' });
  });
});
