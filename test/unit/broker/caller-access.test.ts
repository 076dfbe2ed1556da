import { describe, expect, it } from 'vitest';
import { createAdminCheck } from '../../../src/broker/caller-access.js';

describe('createAdminCheck', () => {
  it.each([
    [[], [], 'anyone', [], true],
    [['alice'], [], 'alice', [], true],
    [['alice'], [], 'bob', ['vdi-admins'], false],
    [[], ['vdi-admins'], 'bob', ['devs', 'vdi-admins'], true],
    [[], ['vdi-admins'], 'bob', ['devs'], false],
    [[], ['vdi-admins'], 'vdi-admins', [], false],
    [['alice'], ['vdi-admins'], 'carol', ['vdi-admins'], true],
    [['alice'], ['vdi-admins'], 'alice', [], true],
  ])(
    'with admins %j and admin groups %j, calls %s in groups %j an admin: %s',
    (admins, groups, login, of, admin) => {
      expect(createAdminCheck(admins, groups)(login, of)).toBe(admin);
    },
  );
});
