import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatHolderGroups,
  judgeHolderEntitlement,
  maxHolderGroupsLength,
  readHolderRecord,
} from '../../../src/entitlements/holder-entitlement.js';
import { holderGroupsAnnotation } from '../../../src/keys.js';
import type { LeaseObject } from '../../../src/kube-objects.js';

const poolId = 'vm/corral-vms/gpu';

function leaseWith(record: string | undefined, holder = 'alice'): LeaseObject {
  return {
    metadata: {
      name: 'corral-vdi-gpu-1',
      ...(record === undefined ? {} : { annotations: { [holderGroupsAnnotation]: record } }),
    },
    spec: { holderIdentity: holder },
  };
}

describe('formatHolderGroups', () => {
  it('records the groups sorted, each once, as a JSON list', () => {
    expect(formatHolderGroups(['ml', 'devs', 'ml'])).toBe('["devs","ml"]');
    expect(formatHolderGroups([])).toBe('[]');
  });

  it('keeps the pool groups that let the holder in first when the groups do not all fit', () => {
    const many = Array.from({ length: 400 }, (_, index) => `group-${String(index).padStart(3, '0')}`);
    const recorded = JSON.parse(formatHolderGroups([...many, 'zz-ml'], ['zz-ml']));
    expect(recorded).toContain('zz-ml');
    expect(recorded.length).toBeLessThan(401);
  });

  it('never writes more than the bound', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 300 }), { maxLength: 80 }), (groups) => {
        expect(formatHolderGroups(groups, groups.slice(0, 3)).length).toBeLessThanOrEqual(
          maxHolderGroupsLength,
        );
      }),
    );
  });
});

describe('readHolderRecord', () => {
  it.each([
    ['a JSON list of groups', '["ml"]', { kind: 'groups', groups: ['ml'] }],
    ['unchecked', 'unchecked', { kind: 'unchecked' }],
    ['no record', undefined, { kind: 'unrecorded' }],
    ['a value that is no list of names', '{"groups":1}', { kind: 'unrecorded' }],
    ['a value that is no JSON', '[ml', { kind: 'unrecorded' }],
  ])('reads %s', (_, record, expected) => {
    expect(readHolderRecord(leaseWith(record))).toEqual(expected);
  });
});

describe('judgeHolderEntitlement', () => {
  it.each([
    ['a holder in an allowed group', '["ml"]', ['ml'], [], 'entitled'],
    ['a holder whose group the pool no longer lists', '["ml"]', ['research'], [], 'not-entitled'],
    ['an allowed login in no group', '[]', ['ml'], ['alice'], 'entitled'],
    ['a holder of a pool that lets everyone', '["devs"]', [], [], 'entitled'],
    ['an assigned claim, whatever the lists', 'unchecked', ['research'], [], 'unchecked'],
    ['a claim from before claims recorded groups', undefined, ['research'], [], 'unchecked'],
  ])('judges %s', (_, record, allowedGroups, allowedUsers, expected) => {
    expect(judgeHolderEntitlement(leaseWith(record), { poolId, allowedGroups, allowedUsers })).toBe(expected);
  });
});
