import { describe, expect, it } from 'vitest';
import type { CommandInput, CommandSpec } from '../../../src/cli/command-spec.js';
import { memberPageLine, memberPageRequest, pageOfMembers } from '../../../src/cli/member-page.js';
import { isVdiError } from '../../../src/errors.js';

const names = Array.from({ length: 12 }, (_, index) => `devpool-${index + 1}`);
const page = (limit: number | undefined, after: string | undefined) =>
  pageOfMembers(names, (name) => name, { limit, after });

const poolList: CommandSpec = {
  words: ['pool', 'list'],
  summary: 'List the pools',
  args: [],
  options: {},
  examples: [],
  run: async () => 0,
};

function flags(given: CommandInput['flags']): CommandInput {
  return {
    args: {},
    flags: given,
    terminal: undefined as unknown as CommandInput['terminal'],
    env: {},
    cluster: () => Promise.reject(new Error('no cluster in this test')),
  };
}

describe('a page of members', () => {
  it('walks the members in natural order, each page naming where the next starts', () => {
    const first = page(5, undefined);
    expect(first).toEqual({
      members: ['devpool-1', 'devpool-2', 'devpool-3', 'devpool-4', 'devpool-5'],
      total: 12,
      skipped: 0,
      next: 'devpool-5',
    });
    expect(memberPageLine(first)).toBe('members 1-5 of 12; next: --after devpool-5');
    const third = page(5, page(5, first.next).next);
    expect(third).toEqual({ members: ['devpool-11', 'devpool-12'], total: 12, skipped: 10, next: undefined });
    expect(memberPageLine(third)).toBe('members 11-12 of 12');
  });

  it('goes on after a member removed since the last page, by order and not by position', () => {
    expect(page(2, 'devpool-9a').members).toEqual(['devpool-10', 'devpool-11']);
    expect(page(3, 'devpool-12')).toEqual({ members: [], total: 12, skipped: 12, next: undefined });
    expect(memberPageLine(page(3, 'devpool-12'))).toBe('no members after 12 of 12');
  });

  it('shows the whole pool without a line when nothing limits it', () => {
    const whole = page(undefined, undefined);
    expect(whole.members).toEqual(names);
    expect(memberPageLine(whole)).toBeUndefined();
    expect(memberPageLine(page(12, undefined))).toBeUndefined();
  });

  it('takes --limit from 1 to 10000 and refuses anything else as a usage error', () => {
    expect(memberPageRequest(flags({ limit: '50', after: 'devpool-50' }), poolList)).toEqual({
      limit: 50,
      after: 'devpool-50',
    });
    expect(memberPageRequest(flags({}), poolList)).toEqual({ limit: undefined, after: undefined });
    for (const bad of ['0', '-1', '10001', '2.5', 'all']) {
      let caught: unknown;
      try {
        memberPageRequest(flags({ limit: bad }), poolList);
      } catch (error) {
        caught = error;
      }
      expect(isVdiError(caught), bad).toBe(true);
      expect((caught as Error).message).toBe(`--limit takes a whole number from 1 to 10000, not "${bad}"`);
    }
  });
});
