import { describe, expect, it } from 'vitest';
import {
  booleanFlag,
  type CommandInput,
  type CommandSpec,
  countFlag,
  requiredFlag,
  stringFlag,
} from '../../../src/cli/command-spec.js';

const poolCreate: CommandSpec = {
  words: ['pool', 'create'],
  summary: 'Create a pool',
  args: ['name'],
  options: {
    size: { type: 'string', value: 'N', help: 'members' },
    from: { type: 'string', help: 'golden' },
  },
  examples: [],
  run: async () => 0,
};

function input(flags: CommandInput['flags']): CommandInput {
  return {
    args: {},
    flags,
    terminal: undefined as unknown as CommandInput['terminal'],
    env: {},
    cluster: () => Promise.reject(new Error('no cluster in this test')),
  };
}

describe('stringFlag and booleanFlag', () => {
  it('read a flag only with the type it was given', () => {
    const flags = input({ size: '3', wait: true });
    expect(stringFlag(flags, 'size')).toBe('3');
    expect(stringFlag(flags, 'wait')).toBeUndefined();
    expect(stringFlag(flags, 'missing')).toBeUndefined();
    expect(booleanFlag(flags, 'wait')).toBe(true);
    expect(booleanFlag(flags, 'size')).toBe(false);
    expect(booleanFlag(flags, 'missing')).toBe(false);
  });
});

describe('requiredFlag', () => {
  it('returns the value when given', () => {
    expect(requiredFlag(input({ size: '3' }), poolCreate, 'size')).toBe('3');
  });

  it.each([{}, { size: '' }])('rejects %j, naming the flag and its placeholder', (flags) => {
    expect(() => requiredFlag(input(flags), poolCreate, 'size')).toThrow(/^"pool create" needs --size N$/);
  });

  it('names VALUE when the flag has no placeholder', () => {
    expect(() => requiredFlag(input({}), poolCreate, 'from')).toThrow(/^"pool create" needs --from VALUE$/);
  });
});

describe('countFlag', () => {
  it.each([
    ['0', 0, 0],
    ['3', 1, 3],
    ['007', 1, 7],
  ])('reads %s with a minimum of %i as %i', (text, min, expected) => {
    expect(countFlag(input({ size: text }), poolCreate, 'size', min)).toBe(expected);
  });

  it.each(['0', '-1', '1.5', '3x', ' 3', '1e3'])('rejects %j with a minimum of 1', (text) => {
    expect(() => countFlag(input({ size: text }), poolCreate, 'size', 1)).toThrow(
      `--size takes a whole number of at least 1, not "${text}"`,
    );
  });

  it('rejects a missing count as a missing flag', () => {
    expect(() => countFlag(input({}), poolCreate, 'size', 1)).toThrow(/needs --size N/);
  });
});
