import { describe, expect, it } from 'vitest';
import {
  actionBodySchema,
  checkInput,
  checkParams,
  desktopListQuerySchema,
  kindParam,
  memberParam,
  namespaceParam,
  parseDesktopId,
  poolParam,
} from '../../../src/broker/input-rules.js';

const served = ['corral-vms', 'team-a'];
const desktopRules = { kind: kindParam, ns: namespaceParam, member: memberParam };

describe('checkInput', () => {
  it('passes a valid value through', () => {
    expect(checkInput(poolParam, 'devpool')).toEqual({ ok: true, value: 'devpool' });
  });

  it('takes both served kinds', () => {
    expect(checkInput(kindParam, 'vm')).toEqual({ ok: true, value: 'vm' });
    expect(checkInput(kindParam, 'ct')).toEqual({ ok: true, value: 'ct' });
  });

  it.each([
    [kindParam, 'pod', 'INVALID_INPUT', '"pod" is not a desktop kind'],
    [namespaceParam, 'n'.repeat(64), 'INVALID_INPUT', 'is not a valid namespace name'],
    [poolParam, 'p'.repeat(51), 'INVALID_INPUT', 'use 1 to 50 lowercase letters'],
    [memberParam, 'DevPool-1', 'INVALID_INPUT', '"DevPool-1" is not a valid member name'],
  ])('refuses %#: %s with %s', (rule, value, code, message) => {
    const checked = checkInput(rule, value);
    expect(checked).toMatchObject({ ok: false, code });
    expect(!checked.ok && checked.message).toContain(message);
  });

  it('takes any JSON object as an action body, and nothing else', () => {
    expect(checkInput(actionBodySchema, { identity: 'bob' }).ok).toBe(true);
    for (const body of [['release'], 'text', 1, null]) {
      expect(checkInput(actionBodySchema, body)).toMatchObject({
        ok: false,
        code: 'INVALID_INPUT',
        message: 'The request body must be a JSON object (its fields are ignored).',
      });
    }
  });

  it('reads all=0, all=1 or nothing from the desktop list query', () => {
    expect(checkInput(desktopListQuerySchema, { all: undefined })).toEqual({ ok: true, value: {} });
    expect(checkInput(desktopListQuerySchema, { all: '1' })).toEqual({ ok: true, value: { all: '1' } });
    expect(checkInput(desktopListQuerySchema, { all: 'yes' })).toMatchObject({
      ok: false,
      message: 'The query parameter all takes 1 (every user) or 0 (yours).',
    });
  });
});

describe('checkParams', () => {
  it('names the first bad parameter in path order', () => {
    expect(checkParams(desktopRules, { kind: 'vm', ns: 'kube-system', member: 'BAD' }, served)).toMatchObject(
      { ok: false, code: 'NOT_FOUND', message: 'Namespace "kube-system" has no pools this broker serves.' },
    );
    expect(checkParams(desktopRules, { kind: 'pod', ns: 'BAD', member: 'BAD' }, served)).toMatchObject({
      ok: false,
      code: 'INVALID_INPUT',
      message: expect.stringContaining('"pod" is not a desktop kind'),
    });
  });

  it('refuses a parameter it has no rule for', () => {
    expect(checkParams({}, { extra: 'devpool' }, served)).toMatchObject({ ok: false, code: 'INVALID_INPUT' });
  });
});

describe('parseDesktopId', () => {
  it('reads a served desktop ID', () => {
    expect(parseDesktopId('vm/team-a/devpool-2', served)).toEqual({
      kind: 'desktop',
      desktopKind: 'vm',
      namespace: 'team-a',
      member: 'devpool-2',
    });
    expect(parseDesktopId('ct/corral-vms/devbox-1', served)).toEqual({
      kind: 'desktop',
      desktopKind: 'ct',
      namespace: 'corral-vms',
      member: 'devbox-1',
    });
  });

  it.each([
    ['vm/corral-vms', 'INVALID_INPUT'],
    ['vm/corral-vms/devpool-1/extra', 'INVALID_INPUT'],
    ['vm/corral-vms/..', 'INVALID_INPUT'],
    ['vm/corral-vms/%2e%2e', 'INVALID_INPUT'],
    ['vm//devpool-1', 'INVALID_INPUT'],
    ['vm/corral-vms/dev\\pool', 'INVALID_INPUT'],
    ['pod/corral-vms/devpool-1', 'INVALID_INPUT'],
    ['vm/elsewhere/devpool-1', 'NOT_FOUND'],
  ])('rejects %s with %s', (id, code) => {
    expect(parseDesktopId(id, served)).toMatchObject({ kind: 'reject', code });
  });
});
