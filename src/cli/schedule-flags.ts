import { readFileSync } from 'node:fs';
import type { CommandInput, CommandSpec } from './command-spec.js';
import { booleanFlag, listFlag, stringFlag } from './command-spec.js';
import { UsageError } from './usage-error.js';

/** The schedule flags of `pool set`. */
export const scheduleOptions = {
  'schedule-file': {
    type: 'string',
    value: 'FILE',
    help: 'Give the pool the schedule in FILE (YAML or JSON: timeZone and periods; - reads standard input). See docs/schedules.md.',
  },
  'time-zone': {
    type: 'string',
    value: 'ZONE',
    help: 'The IANA time zone of the --period flags, such as Europe/Berlin; daylight saving is followed.',
  },
  period: {
    type: 'string',
    value: 'PERIOD',
    multiple: true,
    help: 'A period of the schedule: "NAME DAYS HH:MM-HH:MM buffer N|P% min N max N [to-zero]"; repeat for more. Replaces the stored schedule.',
  },
  'plain-size': {
    type: 'string',
    value: 'N',
    help: 'The size of a scheduled pool outside every period (default: the one recorded, else the member count now).',
  },
  'no-schedule': {
    type: 'boolean',
    help: "Take the pool's schedule away: its size and spares stay as they are then.",
  },
} as const;

/** The schedule flags of `ct-pool apply`: the spec's `size` is the plain size, and a spec applied without one has none. */
export const ctScheduleOptions = {
  'schedule-file': scheduleOptions['schedule-file'],
  'time-zone': scheduleOptions['time-zone'],
  period: {
    ...scheduleOptions.period,
    help: 'A period of the schedule: "NAME DAYS HH:MM-HH:MM buffer N|P% min N max N [to-zero]"; repeat for more. Replaces the file\'s schedule.',
  },
} as const;

/** What the schedule flags ask for, or `undefined` when none is given. */
export async function scheduleFlags(
  input: CommandInput,
  command: CommandSpec,
): Promise<{ schedule: unknown; plainSize?: number } | undefined> {
  const file = stringFlag(input, 'schedule-file');
  const zone = stringFlag(input, 'time-zone');
  const periods = listFlag(input, 'period');
  const plain = stringFlag(input, 'plain-size');
  const off = booleanFlag(input, 'no-schedule');
  if (file === undefined && zone === undefined && periods === undefined && plain === undefined && !off)
    return undefined;
  if (off && (file !== undefined || zone !== undefined || periods !== undefined || plain !== undefined)) {
    throw new UsageError('--no-schedule takes the schedule away; give it alone', command.words);
  }
  if (file !== undefined && (zone !== undefined || periods !== undefined)) {
    throw new UsageError(
      'give the schedule either in --schedule-file or as --time-zone and --period, not both',
      command.words,
    );
  }
  if (file === undefined && !off && (zone === undefined || periods === undefined)) {
    throw new UsageError(
      'a schedule needs --time-zone and one --period or more (or --schedule-file)',
      command.words,
    );
  }
  if (plain !== undefined && !/^\d+$/.test(plain)) {
    throw new UsageError(`--plain-size takes a whole number, not "${plain}"`, command.words);
  }
  const plainSize = plain === undefined ? {} : { plainSize: Number(plain) };
  if (off) return { schedule: null };
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`, command.words);
    }
    const { readScheduleText } = await import('../schedules/read-schedule-text.js');
    return { schedule: readScheduleText(text, file === '-' ? 'standard input' : file), ...plainSize };
  }
  const { parsePeriodFlag } = await import('../pool-schedule.js');
  return { schedule: { timeZone: zone, periods: (periods ?? []).map(parsePeriodFlag) }, ...plainSize };
}
