import { describe, expect, it } from 'vitest';
import { withOwnClaims } from '../../../src/claims/pool-reads.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { leaseOf } from './member-fixtures.js';

function labelled(name: string, holder: string, hash: string, resourceVersion = '42'): LeaseObject {
  const lease = leaseOf(name, { holder, resourceVersion });
  lease.metadata.labels = { ...lease.metadata.labels, 'corral.dev/vdi-holder-hash': hash };
  return lease;
}

const names = (leases: LeaseObject[]) =>
  leases.map((lease) => `${lease.metadata.name}@${lease.metadata.resourceVersion}`).sort();

describe('withOwnClaims', () => {
  it('puts the identity’s own claims, read fresh, over what a cached list shows of them', () => {
    const cached = [
      labelled('devpool-1', 'bob', 'bobhash'),
      labelled('devpool-2', 'alice', 'alicehash', '10'),
      // a claim of alice's the fresh read no longer finds: released since
      labelled('devpool-3', 'alice', 'alicehash'),
      // an older claim without the label (an earlier version wrote it): kept as listed
      leaseOf('devpool-4', { holder: 'alice' }),
    ];
    const own = [
      labelled('devpool-2', 'alice', 'alicehash', '11'),
      labelled('devpool-5', 'alice', 'alicehash'),
    ];
    expect(names(withOwnClaims(cached, own, 'alicehash'))).toEqual([
      'corral-vdi-devpool-1@42',
      'corral-vdi-devpool-2@11',
      'corral-vdi-devpool-4@42',
      'corral-vdi-devpool-5@42',
    ]);
  });

  it('replaces a listed Lease of another holder that the identity has taken since', () => {
    const cached = [labelled('devpool-1', 'bob', 'bobhash', '5')];
    const own = [labelled('devpool-1', 'alice', 'alicehash', '9')];
    expect(withOwnClaims(cached, own, 'alicehash')).toEqual(own);
  });
});
