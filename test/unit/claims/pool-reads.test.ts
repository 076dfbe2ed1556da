import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  advanceFreePageCursor,
  freePageCursor,
  resetFreePageCursor,
  startFreePageWalk,
  withOwnClaims,
} from '../../../src/claims/pool-reads.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import { createVdi } from '../../../src/vdi.js';
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

describe('the cursor of the pages of members that can be free', () => {
  // a process of its own that never reaches a cluster: the cursor lives in memory
  const processContext = () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return createVdi({ kubeConfig }).context;
  };
  const target = { namespace: 'ns', pool: 'devpool' };

  it('starts a new walk from a first page until a claim finds a member past it', () => {
    const ctx = processContext();
    expect(freePageCursor(ctx, target)).toEqual({ from: undefined, walk: 1, position: 0 });
    expect(freePageCursor(ctx, target)).toEqual({ from: undefined, walk: 2, position: 0 });
    advanceFreePageCursor(ctx, target, { from: 'token-b', walk: 2, position: 1 });
    expect(freePageCursor(ctx, target)).toEqual({ from: 'token-b', walk: 2, position: 1 });
  });

  it('moves only onward: a claim that won late on an earlier page of its walk, or on an earlier walk, leaves it', () => {
    const ctx = processContext();
    const first = startFreePageWalk(ctx, target);
    const second = startFreePageWalk(ctx, target);
    advanceFreePageCursor(ctx, target, { from: 'second-3', walk: second.walk, position: 3 });
    advanceFreePageCursor(ctx, target, { from: 'second-1', walk: second.walk, position: 1 });
    advanceFreePageCursor(ctx, target, { from: 'first-5', walk: first.walk, position: 5 });
    expect(freePageCursor(ctx, target).from).toBe('second-3');
    // a later walk wins even from its first page: the next claim reads a fresh first page
    const third = startFreePageWalk(ctx, target);
    advanceFreePageCursor(ctx, target, third);
    expect(freePageCursor(ctx, target)).toEqual({ from: undefined, walk: 4, position: 0 });
  });

  it('after a walk ran out, sends the next claims to a new walk that no claim of an older walk undoes', () => {
    const ctx = processContext();
    const walk = startFreePageWalk(ctx, target);
    advanceFreePageCursor(ctx, target, { from: 'page-2', walk: walk.walk, position: 2 });
    resetFreePageCursor(ctx, target);
    advanceFreePageCursor(ctx, target, { from: 'page-7', walk: walk.walk, position: 7 });
    expect(freePageCursor(ctx, target)).toEqual({ from: undefined, walk: 2, position: 0 });
  });

  it('keeps a cursor per pool and per process', () => {
    const ctx = processContext();
    advanceFreePageCursor(ctx, target, {
      from: 'token',
      walk: startFreePageWalk(ctx, target).walk,
      position: 1,
    });
    expect(freePageCursor(ctx, { ...target, pool: 'other' }).from).toBeUndefined();
    expect(freePageCursor(processContext(), target).from).toBeUndefined();
    expect(freePageCursor(ctx, target).from).toBe('token');
  });
});
