import { parseArgs } from 'node:util';
import { type CommandSpec, commonOptions } from './command-spec.js';
import { UsageError } from './usage-error.js';

/**
 * What a command line asks for: run a command, show help (of everything, of a group such as `pool`, or of one
 * command), or print the version.
 */
export type CommandLine =
  | {
      kind: 'run';
      command: CommandSpec;
      args: Record<string, string>;
      flags: Record<string, string | boolean | string[] | undefined>;
    }
  | { kind: 'help'; command?: CommandSpec; group?: string }
  | { kind: 'version' };

/** The flags, across all commands, that take a value, so their values are not taken for command words. */
function valueFlagsOf(commands: readonly CommandSpec[]): Set<string> {
  const flags = new Set<string>();
  for (const command of commands) {
    for (const [name, option] of Object.entries({ ...commonOptions, ...command.options })) {
      if (option.type !== 'string') continue;
      flags.add(`--${name}`);
      if (option.short) flags.add(`-${option.short}`);
    }
  }
  return flags;
}

/** The positions of the tokens that are words rather than flags or flag values, up to the first `--`. */
function wordPositions(argv: readonly string[], valueFlags: Set<string>): number[] {
  const positions: number[] = [];
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index] ?? '';
    if (token === '--') break;
    if (token.startsWith('-') && token !== '-') {
      if (!token.includes('=') && valueFlags.has(token)) index++;
      continue;
    }
    positions.push(index);
  }
  return positions;
}

function describeParseFailure(error: unknown, words: readonly string[]): UsageError {
  const message = (error as Error).message;
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (unknown) return new UsageError(`unknown flag ${unknown[1]} for "${words.join(' ')}"`, words);
  const missing = /Option '(?:-\w, )?(-\S+)[^']*' argument missing/.exec(message);
  if (missing) return new UsageError(`flag ${missing[1]} needs a value`, words);
  const noValue = /Option '(-\S+)' does not take an argument/.exec(message);
  if (noValue) return new UsageError(`flag ${noValue[1]} takes no value`, words);
  return new UsageError(message, words);
}

/** Reads a command line against the command table. @throws {@link UsageError} for anything it cannot run. */
export function parseCommandLine(argv: readonly string[], commands: readonly CommandSpec[]): CommandLine {
  const positions = wordPositions(argv, valueFlagsOf(commands));
  const [first, second] = positions.map((position) => argv[position] ?? '');
  if (first === undefined) {
    if (argv.includes('--version') || argv.includes('-V')) return { kind: 'version' };
    if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) return { kind: 'help' };
    throw new UsageError(`${argv[0]} is not a command or a top-level flag`, []);
  }
  const command =
    commands.find(
      (candidate) =>
        candidate.words.length === 2 && candidate.words[0] === first && candidate.words[1] === second,
    ) ?? commands.find((candidate) => candidate.words.length === 1 && candidate.words[0] === first);
  if (command === undefined) {
    const group = commands.filter((candidate) => candidate.words[0] === first && !candidate.hidden);
    if (group.length === 0) throw new UsageError(`unknown command "${first}"`, []);
    if (second === undefined && (argv.includes('--help') || argv.includes('-h')))
      return { kind: 'help', group: first };
    const subcommands = group.map((candidate) => candidate.words[1]).join(', ');
    if (second === undefined) throw new UsageError(`"${first}" needs a subcommand: ${subcommands}`, [first]);
    throw new UsageError(`unknown subcommand "${first} ${second}"; "${first}" has: ${subcommands}`, [first]);
  }
  const rest = argv.filter((_, index) => !positions.slice(0, command.words.length).includes(index));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...commonOptions, ...command.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw describeParseFailure(error, command.words);
  }
  const flags = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (flags.help === true) return { kind: 'help', command };
  if (flags.output !== undefined && flags.output !== 'text' && flags.output !== 'json') {
    throw new UsageError(`-o takes text or json, not "${String(flags.output)}"`, command.words);
  }
  const args: Record<string, string> = {};
  const names = command.args;
  const values = parsed.positionals;
  for (const [index, raw] of names.entries()) {
    const name = raw.replace(/\?$/, '');
    const value = values[index];
    if (value !== undefined) args[name] = value;
    else if (!raw.endsWith('?'))
      throw new UsageError(`"${command.words.join(' ')}" needs <${name}>`, command.words);
  }
  if (values.length > names.length) {
    throw new UsageError(
      `"${command.words.join(' ')}" takes ${names.length === 0 ? 'no arguments' : `only ${names.map((name) => `<${name.replace(/\?$/, '')}>`).join(' ')}`}, not "${values.slice(names.length).join(' ')}"`,
      command.words,
    );
  }
  return { kind: 'run', command, args, flags };
}
