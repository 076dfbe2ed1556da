import { describe, expect, it } from 'vitest';
import { brokerOptionsFromEnv } from '../../../src/broker/broker-settings.js';
import { isVdiError } from '../../../src/errors.js';
import { thrownBy } from '../claims/thrown-by.js';

describe('brokerOptionsFromEnv', () => {
  it('gives the documented defaults for an empty environment', () => {
    expect(brokerOptionsFromEnv({})).toEqual({
      enabled: false,
      namespaces: ['corral-vms'],
      admins: [],
      adminGroups: [],
      authRequired: false,
      disconnectGraceMs: 15 * 60_000,
      maxSessionMs: 0,
      idleTimeoutMs: 0,
      idleWarningMs: 5 * 60_000,
      reclaimWarningMs: 5 * 60_000,
      maxDesktopsPerUser: 0,
      drainDelayMs: 5_000,
    });
  });

  it('reads every variable', () => {
    expect(
      brokerOptionsFromEnv({
        CORRAL_VDI_BROKER: '1',
        CORRAL_VDI_NAMESPACES: 'team-a, team-b,,',
        CORRAL_ADMINS: 'alice@example.com , bob',
        CORRAL_ADMIN_GROUPS: 'vdi-admins, ops',
        CORRAL_AUTH_REQUIRED: 'true',
        CORRAL_VDI_DISCONNECT_GRACE: '0',
        CORRAL_VDI_MAX_SESSION: '8h',
        CORRAL_VDI_IDLE_TIMEOUT: '30m',
        CORRAL_VDI_IDLE_WARNING: '2m',
        CORRAL_VDI_RECLAIM_WARNING: '10m',
        CORRAL_MAX_DESKTOPS_PER_USER: ' 2 ',
        CORRAL_VDI_DRAIN_DELAY: '10s',
      }),
    ).toEqual({
      enabled: true,
      namespaces: ['team-a', 'team-b'],
      admins: ['alice@example.com', 'bob'],
      adminGroups: ['vdi-admins', 'ops'],
      authRequired: true,
      disconnectGraceMs: 0,
      maxSessionMs: 8 * 3_600_000,
      idleTimeoutMs: 30 * 60_000,
      idleWarningMs: 2 * 60_000,
      reclaimWarningMs: 10 * 60_000,
      maxDesktopsPerUser: 2,
      drainDelayMs: 10_000,
    });
  });

  it("reads the durations as the original configuration writes them, in Go's grammar", () => {
    expect(
      brokerOptionsFromEnv({
        CORRAL_VDI_DISCONNECT_GRACE: '1.5h',
        CORRAL_VDI_MAX_SESSION: '2h45m30.5s',
        CORRAL_VDI_IDLE_TIMEOUT: '300ms',
        CORRAL_VDI_IDLE_WARNING: '500us',
        CORRAL_VDI_DRAIN_DELAY: '1m2.5s',
      }),
    ).toMatchObject({
      disconnectGraceMs: 5_400_000,
      maxSessionMs: 9_930_500,
      idleTimeoutMs: 300,
      idleWarningMs: 1,
      drainDelayMs: 62_500,
    });
  });

  it.each([
    ['0', false],
    ['off', false],
    ['1', true],
    ['on', true],
    ['YES', true],
  ])('reads CORRAL_VDI_BROKER=%s as %s', (value, expected) => {
    expect(brokerOptionsFromEnv({ CORRAL_VDI_BROKER: value }).enabled).toBe(expected);
  });

  it('treats empty variables as unset', () => {
    expect(
      brokerOptionsFromEnv({ CORRAL_VDI_NAMESPACES: ' ', CORRAL_VDI_DISCONNECT_GRACE: '' }),
    ).toMatchObject({
      namespaces: ['corral-vms'],
      disconnectGraceMs: 15 * 60_000,
    });
  });

  it.each([
    ['CORRAL_VDI_BROKER', 'maybe', 'use 1 (on) or 0 (off)'],
    ['CORRAL_AUTH_REQUIRED', '2', 'use 1 (on) or 0 (off)'],
    ['CORRAL_VDI_NAMESPACES', 'Team_A', 'DNS-1123 label'],
    ['CORRAL_VDI_NAMESPACES', `${'a'.repeat(64)}`, 'at most 63'],
    ['CORRAL_VDI_DISCONNECT_GRACE', '15min', 'unknown unit "min"'],
    ['CORRAL_VDI_MAX_SESSION', '-1h', 'negative'],
    ['CORRAL_MAX_DESKTOPS_PER_USER', '-1', 'whole number of 1 or more, or 0 for no limit'],
    ['CORRAL_MAX_DESKTOPS_PER_USER', 'two', 'whole number of 1 or more, or 0 for no limit'],
  ])('refuses %s=%s with a message naming the variable', (name, value, reason) => {
    const error = thrownBy(() => brokerOptionsFromEnv({ [name]: value }));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toContain(`${name}="${value}"`);
    expect((error as Error).message).toContain(reason);
    expect((error as Error).message).not.toMatch(/\.\.$/);
  });
});
