import { describe, expect, it } from 'vitest';
import { type CommandLine, parseCommandLine } from '../../../src/cli/command-line.js';
import { type CommandSpec, clusterOptions } from '../../../src/cli/command-spec.js';

function command(
  words: string[],
  args: string[],
  options: CommandSpec['options'] = {},
  hidden = false,
): CommandSpec {
  return {
    words,
    summary: words.join(' '),
    args,
    options,
    examples: [],
    ...(hidden ? { hidden } : {}),
    run: async () => 0,
  };
}

const poolCreate = command(['pool', 'create'], ['name'], {
  ...clusterOptions,
  from: { type: 'string', value: 'VM', help: 'golden VM' },
  size: { type: 'string', value: 'N', help: 'members' },
  wait: { type: 'boolean', help: 'wait' },
});
const poolDelete = command(['pool', 'delete'], ['name'], { ...clusterOptions });
const poolWorker = command(['pool', 'worker'], [], {}, true);
const assign = command(['assign'], ['pool', 'identity?'], { ...clusterOptions });
const list = command(['list'], [], { ...clusterOptions });
const commands = [poolCreate, poolDelete, poolWorker, assign, list];

const parse = (...argv: string[]): CommandLine => parseCommandLine(argv, commands);

function run(line: CommandLine): Extract<CommandLine, { kind: 'run' }> {
  if (line.kind !== 'run') throw new Error(`expected a command to run, got ${line.kind}`);
  return line;
}

describe('parseCommandLine', () => {
  it('reads no words as a request for help, and --version or -V as one for the version', () => {
    expect(parse()).toEqual({ kind: 'help' });
    expect(parse('--help')).toEqual({ kind: 'help' });
    expect(parse('-h')).toEqual({ kind: 'help' });
    expect(parse('--version')).toEqual({ kind: 'version' });
    expect(parse('-V')).toEqual({ kind: 'version' });
  });

  it('reads a two-word command with its argument and flags', () => {
    const line = run(parse('pool', 'create', 'devpool', '--from', 'golden', '--size', '3', '--wait'));
    expect(line.command).toBe(poolCreate);
    expect(line.args).toEqual({ name: 'devpool' });
    expect(line.flags).toMatchObject({ from: 'golden', size: '3', wait: true });
  });

  it('finds the command words wherever the flags are, and does not take a flag value for a word', () => {
    const line = run(parse('-n', 'team-a', 'pool', '--size', '3', 'create', 'devpool', '--from=golden'));
    expect(line.command).toBe(poolCreate);
    expect(line.args).toEqual({ name: 'devpool' });
    expect(line.flags).toMatchObject({ namespace: 'team-a', size: '3', from: 'golden' });
  });

  it('takes common flags on every command', () => {
    const line = run(parse('list', '-o', 'json', '--verbose'));
    expect(line.flags).toMatchObject({ output: 'json', verbose: true });
  });

  it('leaves an optional argument out when it is not given', () => {
    expect(run(parse('assign', 'devpool')).args).toEqual({ pool: 'devpool' });
    expect(run(parse('assign', 'devpool', 'alice@example.com')).args).toEqual({
      pool: 'devpool',
      identity: 'alice@example.com',
    });
  });

  it('reads what follows -- as arguments, even when it looks like a flag', () => {
    expect(run(parse('assign', 'devpool', '--', '-alice')).args).toEqual({
      pool: 'devpool',
      identity: '-alice',
    });
  });

  it('answers --help after a command or a group with that help', () => {
    expect(parse('pool', 'create', '--help')).toEqual({ kind: 'help', command: poolCreate });
    expect(parse('pool', '--help')).toEqual({ kind: 'help', group: 'pool' });
  });

  it.each([
    [['--bogus'], /^--bogus is not a command or a top-level flag$/],
    [['frobnicate'], /^unknown command "frobnicate"$/],
    [['pool'], /^"pool" needs a subcommand: create, delete$/],
    [['pool', 'explode'], /^unknown subcommand "pool explode"; "pool" has: create, delete$/],
    [['pool', 'create'], /^"pool create" needs <name>$/],
    [['pool', 'create', 'a', 'b'], /^"pool create" takes only <name>, not "b"$/],
    [['list', 'extra'], /^"list" takes no arguments, not "extra"$/],
    [['pool', 'create', 'a', '--bogus'], /^unknown flag --bogus for "pool create"$/],
    [['pool', 'create', 'a', '--size'], /^flag --size needs a value$/],
    [['list', '--verbose=yes'], /^flag --verbose takes no value$/],
    [['list', '-o', 'yaml'], /^-o takes text or json, not "yaml"$/],
  ])('rejects %j, saying why', (argv, message) => {
    expect(() => parseCommandLine(argv, commands)).toThrow(message);
  });

  it('keeps hidden commands runnable but out of the subcommand list', () => {
    expect(run(parse('pool', 'worker')).command).toBe(poolWorker);
    expect(() => parse('pool')).toThrow(/: create, delete$/);
  });
});
