import { type CommandSpec, commonOptions, type OptionSpec } from './command-spec.js';

function optionRows(options: Readonly<Record<string, OptionSpec>>): string[] {
  const rows = Object.entries(options).map(([name, option]) => {
    const short = option.short ? `-${option.short}, ` : '    ';
    const value = option.type === 'string' ? ` ${option.value ?? 'VALUE'}` : '';
    return { left: `${short}--${name}${value}`, help: option.help };
  });
  const width = Math.max(...rows.map((row) => row.left.length));
  return rows.map((row) => `  ${row.left.padEnd(width)}  ${row.help}`);
}

const helpWidth = 100;

/** Breaks a paragraph into lines of at most {@link helpWidth} columns. */
function wrap(paragraph: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > helpWidth) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

function usageOf(command: CommandSpec): string {
  const args = command.args.map((arg) => (arg.endsWith('?') ? `[${arg.slice(0, -1)}]` : `<${arg}>`));
  return ['corral-vdi', ...command.words, ...args, '[flags]'].join(' ');
}

function commandRows(commands: readonly CommandSpec[]): string[] {
  const visible = commands.filter((command) => !command.hidden);
  const lefts = visible.map((command) =>
    [...command.words, ...command.args.map((arg) => `<${arg.replace(/\?$/, '')}>`)].join(' '),
  );
  const width = Math.max(...lefts.map((left) => left.length));
  return visible.map((command, index) => `  ${(lefts[index] ?? '').padEnd(width)}  ${command.summary}`);
}

/** The help of the whole CLI, or of one group of commands such as `pool`. */
export function renderOverview(commands: readonly CommandSpec[], group?: string): string {
  const listed = group === undefined ? commands : commands.filter((command) => command.words[0] === group);
  return [
    'corral-vdi: desktop pools on Kubernetes and KubeVirt.',
    '',
    `Usage: corral-vdi ${group ?? '<command>'} ${group === undefined ? '' : '<subcommand> '}[flags]`,
    '',
    'Commands:',
    ...commandRows(listed),
    '',
    'Flags of every command:',
    ...optionRows(commonOptions),
    '',
    `Run "corral-vdi ${group ?? '<command>'}${group === undefined ? '' : ' <subcommand>'} --help" for its flags and an example.`,
    ...(group === undefined ? ['"corral-vdi --version" prints the version.'] : []),
  ].join('\n');
}

/** The help of one command: usage, summary, notes, flags and examples. */
export function renderCommandHelp(command: CommandSpec): string {
  return [
    `Usage: ${usageOf(command)}`,
    '',
    command.summary,
    ...(command.notes ?? []).flatMap((note) => ['', ...wrap(note)]),
    '',
    'Flags:',
    ...optionRows({ ...command.options, ...commonOptions }),
    '',
    command.examples.length === 1 ? 'Example:' : 'Examples:',
    ...command.examples.map((example) => `  ${example}`),
  ].join('\n');
}
