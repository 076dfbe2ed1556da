import type { ClusterSession } from './cluster-session.js';
import type { Terminal } from './terminal.js';
import { UsageError } from './usage-error.js';

/** One flag of a command, as `node:util` parseArgs takes it, plus what help shows. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's placeholder in help, such as `N` in `--size N`. */
  value?: string;
  /** A string flag that may be given again, each value adding one. */
  multiple?: boolean;
  help: string;
}

/** What a command's `run` gets: its arguments by name, its flags, the terminal and the cluster. */
export interface CommandInput {
  args: Readonly<Record<string, string>>;
  flags: Readonly<Record<string, string | boolean | string[] | undefined>>;
  terminal: Terminal;
  /** The environment the CLI runs in. */
  env: Readonly<Record<string, string | undefined>>;
  /** Opens the cluster the flags and environment name; only commands that need one call it (it loads the SDK). */
  cluster(): Promise<ClusterSession>;
}

/** A command of the CLI: the words that name it, its help, and what it does. */
export interface CommandSpec {
  /** The words that name it, such as `['pool', 'create']`. */
  words: readonly string[];
  summary: string;
  /** Positional arguments by name, in order; a trailing `?` marks an optional one. */
  args: readonly string[];
  options: Readonly<Record<string, OptionSpec>>;
  /** Lines of `$ corral-vdi …` examples for help. */
  examples: readonly string[];
  /** Further help paragraphs. */
  notes?: readonly string[];
  /** Left out of the command list (the background half of `dev-cluster up`). */
  hidden?: boolean;
  /** Resolves with the exit code, 0 unless it says otherwise. */
  run(input: CommandInput): Promise<number | undefined>;
}

/** Flags every command takes. */
export const commonOptions = {
  output: {
    type: 'string',
    short: 'o',
    value: 'text|json',
    help: 'Output format: text (default) or json for scripts.',
  },
  verbose: { type: 'boolean', help: 'On failure, also print the error code and the chain of causes.' },
  help: { type: 'boolean', short: 'h', help: 'Show this help.' },
} as const satisfies Record<string, OptionSpec>;

/** Flags of every command that talks to a cluster. */
export const clusterOptions = {
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    help: 'The kubeconfig file. Default: $KUBECONFIG, else ~/.kube/config.',
  },
  context: {
    type: 'string',
    value: 'NAME',
    help: 'The kubeconfig context to use. Default: its current context.',
  },
  namespace: {
    type: 'string',
    short: 'n',
    value: 'NS',
    help: 'The namespace of the pools. Default: $CORRAL_NAMESPACE, else corral-vms.',
  },
} as const satisfies Record<string, OptionSpec>;

/** The values of a repeatable `--flag`, in order, or `undefined` when it was not given. */
export function listFlag(input: CommandInput, name: string): string[] | undefined {
  const value = input.flags[name];
  return Array.isArray(value) ? value : undefined;
}

/** The `--flag`, or `undefined`, as a string. */
export function stringFlag(input: CommandInput, name: string): string | undefined {
  const value = input.flags[name];
  return typeof value === 'string' ? value : undefined;
}

/** Whether the boolean `--flag` was given. */
export function booleanFlag(input: CommandInput, name: string): boolean {
  return input.flags[name] === true;
}

/** The `--flag` as a string, required. @throws {@link UsageError} when it is missing. */
export function requiredFlag(input: CommandInput, command: CommandSpec, name: string): string {
  const value = stringFlag(input, name);
  if (value === undefined || value === '') {
    const placeholder = command.options[name]?.value ?? 'VALUE';
    throw new UsageError(`"${command.words.join(' ')}" needs --${name} ${placeholder}`, command.words);
  }
  return value;
}

/** The `--flag` as a whole number of at least `min`, required. @throws {@link UsageError} otherwise. */
export function countFlag(input: CommandInput, command: CommandSpec, name: string, min: number): number {
  const text = requiredFlag(input, command, name);
  if (!/^\d+$/.test(text) || Number(text) < min) {
    throw new UsageError(`--${name} takes a whole number of at least ${min}, not "${text}"`, command.words);
  }
  return Number(text);
}
