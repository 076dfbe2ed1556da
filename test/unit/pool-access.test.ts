import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canUsePool, refusalError } from '../../src/claims/access.js';
import { isVdiError } from '../../src/errors.js';

const poolId = 'vm/corral-vms/gpu';

describe('canUsePool', () => {
  it.each([
    ['a pool without lists lets everyone', [], [], 'alice', [], false, true],
    ['an allowed group lets its member', ['ml'], [], 'alice', ['devs', 'ml'], false, true],
    ['an allowed group refuses a caller in other groups', ['ml'], [], 'alice', ['devs'], false, false],
    ['an allowed group refuses a caller in no group', ['ml'], [], 'alice', [], false, false],
    ['an allowed user lets that login', [], ['alice'], 'alice', [], false, true],
    ['an allowed user refuses another login', [], ['alice'], 'bob', ['alice'], false, false],
    ['either list lets', ['ml'], ['bob'], 'bob', [], false, true],
    ['an admin may use every pool', ['ml'], ['bob'], 'carol', [], true, true],
    ['a login that is a group name is not in the group', ['ml'], [], 'ml', [], false, false],
    ['groups match exactly, not by case', ['ML'], [], 'alice', ['ml'], false, false],
  ])('%s', (_, allowedGroups, allowedUsers, identity, groups, isAdmin, allowed) => {
    const decision = canUsePool({ identity, groups, isAdmin, pool: { poolId, allowedGroups, allowedUsers } });
    expect(decision.kind).toBe(allowed ? 'allowed' : 'refused');
  });

  it('refuses with NOT_ENTITLED, naming the pool and the groups to ask for', () => {
    const decision = canUsePool({
      identity: 'alice',
      groups: ['devs'],
      isAdmin: false,
      pool: { poolId, allowedGroups: ['ml', 'research'] },
    });
    if (decision.kind !== 'refused') throw new Error('expected a refusal');
    expect(decision.reason).toBe(
      'alice may not use pool vm/corral-vms/gpu; ask an administrator to be added to one of its groups (ml, research) or to its allowed users.',
    );
    const error = refusalError(decision);
    expect(isVdiError(error, 'NOT_ENTITLED')).toBe(true);
    expect(error.details).toEqual({ pool: poolId, allowedGroups: ['ml', 'research'] });
  });

  it('allows exactly the admins, the listed logins and the members of listed groups, when a list is set', () => {
    const name = fc.constantFrom('alice', 'bob', 'carol', 'ml', 'devs', 'ops');
    fc.assert(
      fc.property(
        fc.array(name),
        fc.array(name),
        name,
        fc.array(name),
        fc.boolean(),
        (allowedGroups, allowedUsers, identity, groups, isAdmin) => {
          const decision = canUsePool({
            identity,
            groups,
            isAdmin,
            pool: { poolId, allowedGroups, allowedUsers },
          });
          const open = allowedGroups.length === 0 && allowedUsers.length === 0;
          const listed =
            allowedUsers.includes(identity) || groups.some((group) => allowedGroups.includes(group));
          expect(decision.kind === 'allowed').toBe(open || isAdmin || listed);
        },
      ),
    );
  });
});
