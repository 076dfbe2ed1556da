import { describe, expect, it } from 'vitest';
import { toDesktopView } from '../../../src/claims/desktop-view.js';
import { toDesktopJson } from '../../../src/cli/json-views.js';
import type { LeaseObject } from '../../../src/kube-objects.js';
import type { VirtualMachine } from '../../../src/kubevirt-types.js';

const jsonTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function vm(annotations: Record<string, string> = {}, status = 'Running', labels = {}): VirtualMachine {
  return {
    metadata: {
      name: 'devpool-1',
      namespace: 'corral-vms',
      labels: { 'corral.dev/vdi-pool': 'devpool', ...labels },
      annotations,
    },
    spec: { runStrategy: 'Manual' },
    status: { printableStatus: status },
  };
}

// As the apiserver returns it: MicroTime with six fraction digits.
const lease: LeaseObject = {
  metadata: {
    name: 'corral-vdi-devpool-1',
    annotations: { 'corral.dev/vdi-session-id': 'session-1' },
  },
  spec: {
    holderIdentity: 'alice@example.com',
    acquireTime: '2026-07-02T11:58:46.287000Z',
    renewTime: '2026-07-02T11:58:46.287000Z',
    leaseDurationSeconds: 3600,
  },
};

describe('toDesktopJson', () => {
  it('writes a claimed desktop with every field and both times in one format', () => {
    expect(toDesktopJson(toDesktopView(vm(), lease))).toEqual({
      id: 'vm/corral-vms/devpool-1',
      namespace: 'corral-vms',
      member: 'devpool-1',
      pool: 'devpool',
      poolId: 'vm/corral-vms/devpool',
      owner: 'alice@example.com',
      sessionId: 'session-1',
      claimedAt: '2026-07-02T11:58:46.287Z',
      expiresAt: '2026-07-02T12:58:46.287Z',
      legacy: false,
      phase: 'Running',
      running: true,
      ephemeral: false,
    });
  });

  it('writes null for what a free desktop does not have', () => {
    const json = toDesktopJson(toDesktopView(vm({}, 'Stopped'), undefined));
    expect(json).toMatchObject({
      owner: null,
      sessionId: null,
      claimedAt: null,
      expiresAt: null,
      legacy: false,
      running: false,
      phase: 'Stopped',
    });
    expect(Object.values(json)).not.toContain(undefined);
  });

  it('writes a v0.6.0 assignment time with an offset and no fraction in the same format', () => {
    // v0.6.0 wrote the user as a label and the time as it came
    const legacy = vm({ 'corral.dev/vdi-claimed-at': '2026-07-02T13:00:00+02:00' }, 'Running', {
      'corral.dev/vdi-assigned-to': 'bob',
    });
    const json = toDesktopJson(toDesktopView(legacy, undefined));
    expect(json).toMatchObject({
      owner: 'bob',
      legacy: true,
      claimedAt: '2026-07-02T11:00:00.000Z',
    });
  });

  it('writes every time as RFC 3339 UTC with milliseconds, whatever precision the Lease has', () => {
    for (const time of ['2026-07-02T11:58:46Z', '2026-07-02T11:58:46.5Z', '2026-07-02T11:58:46.123456789Z']) {
      const json = toDesktopJson(
        toDesktopView(vm(), { ...lease, spec: { ...lease.spec, acquireTime: time } }),
      );
      expect(json.claimedAt).toMatch(jsonTime);
      expect(json.expiresAt).toMatch(jsonTime);
    }
  });
});
