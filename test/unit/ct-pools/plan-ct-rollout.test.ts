import { describe, expect, it } from 'vitest';
import { toCtMemberFacts } from '../../../src/ct/ct-member-facts.js';
import { planCtRollout } from '../../../src/ct-pools/plan-ct-rollout.js';
import type { LeaseObject, PodObject } from '../../../src/kube-objects.js';
import type { PoolRollout } from '../../../src/pool-rollout.js';

const now = new Date('2026-01-01T12:00:00.000Z');
const oldImage = 'ghcr.io/acme/devbox:1.4';
const newImage = 'ghcr.io/acme/devbox:1.5';

function member(name: string, image: string, ready = true) {
  const pod: PodObject = {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: { 'corral.dev/vdi-pool': 'devbox', 'corral.dev/vdi-kind': 'ct' },
      annotations: { 'corral.dev/vdi-source': image },
    },
    spec: { containers: [{ name: 'desktop', image }], nodeName: 'node-1' },
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  };
  return { member: name, pod: toCtMemberFacts(pod) };
}

function held(name: string): LeaseObject {
  return {
    metadata: { name: `corral-vdi-${name}`, resourceVersion: '5' },
    spec: {
      holderIdentity: 'alice@example.com',
      acquireTime: now.toISOString(),
      renewTime: now.toISOString(),
      leaseDurationSeconds: 3600,
    },
  };
}

function pass(input: {
  members: ReturnType<typeof member>[];
  leases?: LeaseObject[];
  rollout?: Partial<PoolRollout>;
  buffer: number;
  size?: number;
  cap?: number;
}) {
  const leases = input.leases ?? [];
  const claimed = new Set(leases.map((lease) => lease.metadata.name));
  return planCtRollout({
    rollout: {
      to: newImage,
      maxUnavailable: 1,
      startedAt: now.toISOString(),
      rebuilding: [],
      ...input.rollout,
    },
    members: input.members,
    leases,
    free: new Map(input.members.map((read) => [read.member, !claimed.has(`corral-vdi-${read.member}`)])),
    buffer: input.buffer,
    size: input.size ?? input.members.length,
    standing: input.members.length,
    cap: input.cap ?? Number.POSITIVE_INFINITY,
    now,
  });
}

describe('planCtRollout', () => {
  it('makes an extra member first when the buffer holds every Ready free member, and replaces none', () => {
    const members = ['devbox-1', 'devbox-2', 'devbox-3'].map((name) => member(name, oldImage));
    const plan = pass({ members, buffer: 3 });
    expect(plan).toMatchObject({ extra: 1, replace: [], remove: [], keepsExtras: true });
    expect(plan.plan.heldBack).toBe(3);
  });

  it('makes no extra member past the cap, and then waits', () => {
    const members = ['devbox-1', 'devbox-2', 'devbox-3'].map((name) => member(name, oldImage));
    expect(pass({ members, buffer: 3, cap: 3 })).toMatchObject({ extra: 0, replace: [], remove: [] });
  });

  it('waits for an extra member to be Ready before it takes an old one, and then removes an old one for it', () => {
    const old = ['devbox-1', 'devbox-2', 'devbox-3'].map((name) => member(name, oldImage));
    const starting = pass({
      members: [...old, member('devbox-4', newImage, false)],
      rollout: { rebuilding: ['devbox-4'] },
      buffer: 3,
      size: 3,
    });
    expect(starting).toMatchObject({ settled: [], extra: 0, replace: [], remove: [] });
    const ready = pass({
      members: [...old, member('devbox-4', newImage)],
      rollout: { rebuilding: ['devbox-4'] },
      buffer: 3,
      size: 3,
    });
    expect(ready).toMatchObject({ settled: ['devbox-4'], remove: ['devbox-3'], replace: [] });
  });

  it('replaces at most maxUnavailable at once, the journal counted, while the buffer stays Ready', () => {
    const members = ['devbox-1', 'devbox-2', 'devbox-3', 'devbox-4', 'devbox-5'].map((name) =>
      member(name, oldImage),
    );
    expect(pass({ members, buffer: 1, rollout: { maxUnavailable: 2 } }).replace).toHaveLength(2);
    const underway = pass({
      members: [...members.slice(0, 4), member('devbox-5', newImage, false)],
      buffer: 1,
      rollout: { maxUnavailable: 2, rebuilding: ['devbox-5'] },
    });
    expect(underway.replace).toHaveLength(1);
    expect(pass({ members, buffer: 4, rollout: { maxUnavailable: 3 } }).replace).toHaveLength(1);
  });

  it('never takes a claimed member, and drops one claimed while in the journal', () => {
    const members = [member('devbox-1', oldImage), member('devbox-2', oldImage)];
    const plan = pass({
      members,
      leases: [held('devbox-1'), held('devbox-2')],
      buffer: 0,
      rollout: { rebuilding: ['devbox-2'] },
    });
    expect(plan).toMatchObject({ replace: [], remove: [], extra: 0, dropped: ['devbox-2'] });
    expect(plan.plan.claimed).toEqual(['devbox-1', 'devbox-2']);
  });

  it('paused, finishes a replacement its journal holds and begins nothing', () => {
    const members = ['devbox-1', 'devbox-2', 'devbox-3'].map((name) => member(name, oldImage));
    const plan = pass({
      members,
      buffer: 0,
      rollout: { paused: true, maxUnavailable: 3, rebuilding: ['devbox-2'] },
    });
    expect(plan).toMatchObject({ replace: ['devbox-2'], remove: [], extra: 0 });
  });

  it('makes again a journal member with no object left', () => {
    const members = [member('devbox-1', oldImage)];
    expect(pass({ members, buffer: 1, rollout: { rebuilding: ['devbox-2'] } }).recreate).toEqual([
      'devbox-2',
    ]);
  });
});
