import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isVdiError } from '../../src/errors.js';
import {
  type DesktopRef,
  formatDesktopId,
  formatPoolId,
  type PoolRef,
  parseDesktopId,
  parsePoolId,
} from '../../src/ids.js';
import { thrownBy } from './claims/thrown-by.js';

describe('pool IDs', () => {
  it.each<[PoolRef, string]>([
    [{ kind: 'vm', namespace: 'corral-vms', pool: 'devpool' }, 'vm/corral-vms/devpool'],
    [{ kind: 'ct', namespace: 'team-a', pool: 'shells' }, 'ct/team-a/shells'],
  ])('formats %j as %s and reads it back', (ref, id) => {
    expect(formatPoolId(ref)).toBe(id);
    expect(parsePoolId(id)).toEqual(ref);
  });

  it.each([
    'vm/corral-vms',
    'vm/corral-vms/devpool/1',
    'pod/corral-vms/devpool',
    'VM/corral-vms/devpool',
    'vm/Corral/devpool',
    'vm//devpool',
    'vm/corral-vms/Dev_Pool',
    'vm/corral-vms/',
    '',
  ])('refuses %j with INVALID_INPUT', (id) => {
    const error = thrownBy(() => parsePoolId(id));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
  });
});

describe('desktop IDs', () => {
  it.each<[DesktopRef, string]>([
    [{ kind: 'vm', namespace: 'corral-vms', member: 'devpool-1' }, 'vm/corral-vms/devpool-1'],
    [{ kind: 'vm', namespace: 'corral-vms', member: 'web.prod-2' }, 'vm/corral-vms/web.prod-2'],
    [{ kind: 'ct', namespace: 'team-a', member: 'shells-3' }, 'ct/team-a/shells-3'],
  ])('formats %j as %s and reads it back', (ref, id) => {
    expect(formatDesktopId(ref)).toBe(id);
    expect(parseDesktopId(id)).toEqual(ref);
  });

  it.each<[string, RegExp]>([
    ['vm/corral-vms', /is not a desktop ID; pass <kind>\/<namespace>\/<name>/],
    ['ct/corral-vms/devpool-1/x', /is not a desktop ID/],
    ['kv/corral-vms/devpool-1', /with kind vm or ct/],
    ['vm/corral_vms/devpool-1', /is not a desktop ID/],
    ['vm/corral-vms/DevPool-1', /does not end in a member name/],
    ['vm/corral-vms/', /does not end in a member name/],
  ])('refuses %j with INVALID_INPUT and says what to pass', (id, message) => {
    const error = thrownBy(() => parseDesktopId(id));
    expect(isVdiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it('reads back every desktop ID it formats', () => {
    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
    fc.assert(
      fc.property(fc.constantFrom('vm', 'ct' as const), label, label, (kind, namespace, member) => {
        const ref: DesktopRef = { kind, namespace, member };
        expect(parseDesktopId(formatDesktopId(ref))).toEqual(ref);
      }),
    );
  });
});
