import type { ReclaimAction } from '../pool-settings.js';
import { durationSchema } from '../validate.js';
import { booleanFlag, type CommandInput, type CommandSpec, listFlag, stringFlag } from './command-spec.js';
import { UsageError } from './usage-error.js';

export const cloneTimeoutOption = {
  'clone-timeout': {
    type: 'string',
    value: 'DURATION',
    help: 'How long one clone may take before the command gives up, such as 90s or 5m. Default 2m.',
  },
} as const;

/** The flags of a pool's own settings, shared by `pool create`, `pool set` and `ct-pool apply`. */
export const settingsOptions = {
  'reclaim-action': {
    type: 'string',
    value: 'ACTION',
    help: 'What the reclaim policy does with a desktop: stop (persistent default), recreate (ephemeral default) or notify (report it and keep the claim).',
  },
  'reclaim-webhook': {
    type: 'string',
    value: 'URL',
    help: 'An https URL that notify POSTs a JSON body to.',
  },
  'allow-http-webhook': {
    type: 'boolean',
    help: 'Accept an http webhook on localhost, 127.0.0.1 or ::1.',
  },
  'idle-timeout': {
    type: 'string',
    value: 'DURATION',
    help: "Reclaim a desktop whose broker consoles carried no input this long, such as 30m; 0 turns it off for the pool. Default: the broker's.",
  },
  'allow-group': {
    type: 'string',
    value: 'GROUP',
    multiple: true,
    help: "Let only members of this group (and the allowed users, and admins) claim from the pool; repeat for more. Replaces the stored list; --allow-group '' clears it.",
  },
  'allow-user': {
    type: 'string',
    value: 'LOGIN',
    multiple: true,
    help: "Let this login claim from the pool when groups or users are limited; repeat for more. Replaces the stored list; --allow-user '' clears it.",
  },
  'max-desktops-per-user': {
    type: 'string',
    value: 'N',
    help: 'Refuse a claim from the pool to a user who already holds N desktops in the namespace, in any pool; 0 clears it. Default: no limit of the pool (the broker may set one).',
  },
} as const;

/** A list flag where the one value `''` clears the list, as `--max-desktops-per-user 0` clears the limit. */
function allowListFlag(input: CommandInput, name: string, command: CommandSpec): string[] | undefined {
  const values = listFlag(input, name);
  if (values === undefined || !values.includes('')) return values;
  if (values.length > 1)
    throw new UsageError(
      `--${name} '' clears the list; give it alone, not beside other values`,
      command.words,
    );
  return [];
}

/** The pool settings the flags name; a bad duration is a usage error, a bad value the SDK's INVALID_INPUT. */
export function settingsFlags(input: CommandInput, command: CommandSpec) {
  const action = stringFlag(input, 'reclaim-action');
  const webhook = stringFlag(input, 'reclaim-webhook');
  const idle = stringFlag(input, 'idle-timeout');
  const allowedGroups = allowListFlag(input, 'allow-group', command);
  const allowedUsers = allowListFlag(input, 'allow-user', command);
  const limit = stringFlag(input, 'max-desktops-per-user');
  if (limit !== undefined && !/^\d+$/.test(limit)) {
    throw new UsageError(
      `--max-desktops-per-user takes a whole number (0 clears it), not "${limit}"`,
      command.words,
    );
  }
  let idleTimeoutMs: number | undefined;
  if (idle !== undefined) {
    const parsed = durationSchema.safeParse(idle);
    if (!parsed.success)
      throw new UsageError(`--idle-timeout: ${parsed.error.issues[0]?.message}`, command.words);
    idleTimeoutMs = parsed.data;
  }
  return {
    ...(action === undefined ? {} : { reclaimAction: action as ReclaimAction }),
    ...(webhook === undefined ? {} : { reclaimWebhook: webhook }),
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
    ...(allowedGroups === undefined ? {} : { allowedGroups }),
    ...(allowedUsers === undefined ? {} : { allowedUsers }),
    ...(limit === undefined ? {} : { maxDesktopsPerUser: Number(limit) }),
    ...(booleanFlag(input, 'allow-http-webhook') ? { allowLoopbackHttpWebhook: true } : {}),
  };
}

export function cloneTimeoutMs(input: CommandInput, command: CommandSpec): number | undefined {
  const text = stringFlag(input, 'clone-timeout');
  if (text === undefined) return undefined;
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success) {
    throw new UsageError(`--clone-timeout: ${parsed.error.issues[0]?.message}`, command.words);
  }
  const ms = parsed.data;
  if (ms <= 0) throw new UsageError('--clone-timeout must be longer than 0', command.words);
  return ms;
}

/** The `--min-ready` flag, shared by `pool create`, `pool set` and `ct-pool apply`. */
export const minReadyOption = {
  'min-ready': {
    type: 'string',
    value: 'N',
    help: 'How many free members to keep running as warm spares, 0 to the size. They use capacity all the time.',
  },
} as const;

// the SDK checks the number, so every bad value is the same INVALID_INPUT with the same message
export function minReadyFlag(input: CommandInput): number | undefined {
  const text = stringFlag(input, 'min-ready');
  return text === undefined ? undefined : /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
}
