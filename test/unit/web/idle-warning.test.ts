import { describe, expect, it } from 'vitest';
import type { DesktopBody } from '../../../src/broker/schemas.js';
import { describeIdleWarning, describeSession } from '../../../src/web/describe-session.js';

const desktop: DesktopBody = {
  id: 'vm/corral-vms/devpool-1',
  kind: 'vm',
  namespace: 'corral-vms',
  member: 'devpool-1',
  pool: 'devpool',
  poolId: 'vm/corral-vms/devpool',
  owner: 'alice@example.com',
  sessionId: 's-1',
  claimedAt: '2026-01-01T10:00:00Z',
  expiresAt: '2026-01-01T11:00:00Z',
  legacy: false,
  phase: 'Running',
  running: true,
  ephemeral: false,
  connected: true,
  disconnectedAt: null,
  reclaimAt: '2026-01-01T10:30:00Z',
  reclaimReason: 'idle',
};

describe('the idle warning of the Desktops page', () => {
  it('shows a banner only while the broker says the idle reclaim is near', () => {
    expect(describeIdleWarning(desktop)).toBeUndefined();
    expect(describeIdleWarning({ ...desktop, idleWarning: true })).toMatch(
      /^No key or pointer input has reached this desktop for a while: it will be reclaimed at .+\. Type or move the pointer/,
    );
  });

  it('names idleness as the reason of a pending reclaim', () => {
    expect(describeSession(desktop)).toMatch(
      /because no key or pointer input reached it through a console\.$/,
    );
  });
});
