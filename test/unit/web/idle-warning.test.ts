import { describe, expect, it } from 'vitest';
import type { DesktopBody } from '../../../src/broker/schemas.js';
import {
  describeReclaimWarning,
  describeSession,
  formatCountdown,
} from '../../../src/web/describe-session.js';

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

describe('the reclaim warnings of the Desktops page', () => {
  it('shows a banner only while the broker says the idle reclaim is near', () => {
    expect(describeReclaimWarning(desktop)).toBeUndefined();
    const warning = describeReclaimWarning({ ...desktop, idleWarning: true, reclaimWarning: true });
    expect(warning?.before).toBe(
      'No key or pointer input has reached this desktop for a while: it will be reclaimed in ',
    );
    expect(warning?.after).toMatch(/^ \(at .+\)\. Type or move the pointer in its console to keep it\.$/);
  });

  it('says why for a reclaim at the longest session, and to save the work', () => {
    const warning = describeReclaimWarning({
      ...desktop,
      reclaimReason: 'max-duration',
      reclaimWarning: true,
    });
    expect(warning).toMatchObject({ reason: 'max-duration', before: 'This desktop will be reclaimed in ' });
    expect(warning?.after).toMatch(
      /because the session reaches its longest allowed time\. Save your work now\.$/,
    );
  });

  it.each([
    [299_001, '5:00'],
    [299_000, '4:59'],
    [59_500, '1:00'],
    [0, '0:00'],
    [-5_000, '0:00'],
    [3_723_000, '1:02:03'],
  ])('counts %i ms down as %s', (ms, shown) => {
    expect(formatCountdown(ms)).toBe(shown);
  });

  it('names idleness as the reason of a pending reclaim', () => {
    expect(describeSession(desktop)).toMatch(
      /because no key or pointer input reached it through a console\.$/,
    );
  });
});
