import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import {
  buildPoolSettingsConfigMap,
  checkPoolSettings,
  type PoolSettings,
  poolSettingsOf,
  reclaimActionOf,
} from '../../src/pool-settings.js';

const persistent = { pool: 'devpool', ephemeral: false };
const ephemeral = { pool: 'kiosk', ephemeral: true };

function refusal(settings: PoolSettings, context = persistent): string | undefined {
  try {
    checkPoolSettings(settings, context);
  } catch (error) {
    if (isVdiError(error, 'INVALID_INPUT')) return error.message;
    throw error;
  }
  return undefined;
}

describe('checkPoolSettings', () => {
  it.each<[string, PoolSettings, typeof persistent & { allowLoopbackHttp?: boolean }]>([
    ['stop on a persistent pool', { reclaimAction: 'stop' }, persistent],
    ['recreate on an ephemeral pool', { reclaimAction: 'recreate' }, ephemeral],
    ['notify without a webhook', { reclaimAction: 'notify' }, persistent],
    [
      'notify with an https webhook',
      { reclaimAction: 'notify', reclaimWebhook: 'https://hooks.example.com/vdi' },
      ephemeral,
    ],
    [
      'an http webhook on 127.0.0.1 when allowed',
      { reclaimAction: 'notify', reclaimWebhook: 'http://127.0.0.1:8123/hook' },
      { ...persistent, allowLoopbackHttp: true },
    ],
    [
      'an http webhook on ::1 when allowed',
      { reclaimAction: 'notify', reclaimWebhook: 'http://[::1]:8123/hook' },
      { ...persistent, allowLoopbackHttp: true },
    ],
    ['an idle timeout of 0 (off for the pool)', { idleTimeoutMs: 0 }, persistent],
  ])('accepts %s', (_, settings, context) => {
    expect(refusal(settings, context)).toBeUndefined();
  });

  it.each<[string, PoolSettings, typeof persistent & { allowLoopbackHttp?: boolean }, RegExp]>([
    [
      'an unknown action',
      { reclaimAction: 'hibernate' as never },
      persistent,
      /not known; use stop, recreate, notify/,
    ],
    [
      'recreate on a persistent pool',
      { reclaimAction: 'recreate' },
      persistent,
      /persistent.*use --reclaim-action stop or notify/,
    ],
    ['stop on an ephemeral pool', { reclaimAction: 'stop' }, ephemeral, /ephemeral.*recreate or notify/],
    [
      'a webhook without notify',
      { reclaimWebhook: 'https://hooks.example.com' },
      persistent,
      /only by the notify action/,
    ],
    [
      'a webhook that is no URL',
      { reclaimAction: 'notify', reclaimWebhook: 'hooks' },
      persistent,
      /not a URL/,
    ],
    [
      'an http webhook elsewhere',
      { reclaimAction: 'notify', reclaimWebhook: 'http://hooks.example.com' },
      persistent,
      /not https/,
    ],
    [
      'an http webhook elsewhere even when loopback http is allowed',
      { reclaimAction: 'notify', reclaimWebhook: 'http://10.0.0.8/hook' },
      { ...persistent, allowLoopbackHttp: true },
      /not https/,
    ],
    [
      'an http webhook on localhost unless allowed',
      { reclaimAction: 'notify', reclaimWebhook: 'http://localhost:9/h' },
      persistent,
      /only when allowed/,
    ],
    [
      'a webhook with credentials',
      { reclaimAction: 'notify', reclaimWebhook: 'https://u:p@hooks.example.com' },
      persistent,
      /credentials/,
    ],
    ['a negative idle timeout', { idleTimeoutMs: -1 }, persistent, /Idle timeout -1/],
  ])('refuses %s', (_, settings, context, message) => {
    expect(refusal(settings, context)).toMatch(message);
  });
});

describe('pool settings in a ConfigMap', () => {
  it('reads back what it writes', () => {
    const settings: PoolSettings = {
      reclaimAction: 'notify',
      reclaimWebhook: 'https://hooks.example.com/vdi',
      idleTimeoutMs: 1_800_000,
    };
    const configMap = buildPoolSettingsConfigMap('devpool', settings, undefined);
    expect(configMap.metadata.name).toBe('corral-vdi-pool-devpool');
    expect(configMap.data).toEqual({
      'reclaim-action': 'notify',
      'reclaim-webhook': 'https://hooks.example.com/vdi',
      'idle-timeout': '30m',
    });
    expect(poolSettingsOf(configMap)).toEqual(settings);
  });

  it('takes a value edited into nonsense as unset', () => {
    expect(
      poolSettingsOf({ metadata: {}, data: { 'reclaim-action': 'explode', 'idle-timeout': 'soon' } }),
    ).toEqual({});
  });

  it('answers the pool reset when no action is set', () => {
    expect(reclaimActionOf({}, false)).toBe('stop');
    expect(reclaimActionOf({}, true)).toBe('recreate');
    expect(reclaimActionOf({ reclaimAction: 'notify' }, true)).toBe('notify');
  });
});
