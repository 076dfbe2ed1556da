import type { RolloutStatus } from '../rollouts/describe-rollout.js';
import { durationSchema } from '../validate.js';
import type { CommandInput, CommandSpec } from './command-spec.js';
import { booleanFlag, stringFlag } from './command-spec.js';
import { UsageError } from './usage-error.js';

/** The roll-out flags of `pool set`. */
export const rolloutOptions = {
  from: {
    type: 'string',
    value: 'GOLDEN',
    help: "Move the pool to a new golden VM: the broker's leader rebuilds its free members from GOLDEN now and claimed ones once released. See docs/rollouts.md.",
  },
  'max-unavailable': {
    type: 'string',
    value: 'N',
    help: 'With --from: how many members may be rebuilding at once (default 1); the free running buffer holds whatever N is.',
  },
  'rollout-deadline': {
    type: 'string',
    value: 'WHEN',
    help: "With --from: when claimed members not yet rebuilt are taken back with the pool's reclaim action, their holders warned ahead: a duration from now (2h) or an RFC 3339 time. Default: wait for releases.",
  },
  'pause-rollout': {
    type: 'boolean',
    help: "Pause the pool's roll-out: rebuilds under way finish, none starts.",
  },
  'resume-rollout': { type: 'boolean', help: "Resume the pool's paused roll-out." },
} as const;

/**
 * What the roll-out flags ask for: a roll-out to start (its deadline an RFC 3339 time, or a duration from the
 * moment it starts), a pause or resume, or nothing.
 */
export type RolloutRequest =
  | { kind: 'start'; from: string; maxUnavailable?: number; deadline?: string; deadlineInMs?: number }
  | { kind: 'pause'; paused: boolean };

/** The roll-out the flags ask for. */
export function rolloutFlags(input: CommandInput, command: CommandSpec): RolloutRequest | undefined {
  const from = stringFlag(input, 'from');
  const max = stringFlag(input, 'max-unavailable');
  const deadline = stringFlag(input, 'rollout-deadline');
  const pause = booleanFlag(input, 'pause-rollout');
  const resume = booleanFlag(input, 'resume-rollout');
  if (pause && resume)
    throw new UsageError('give --pause-rollout or --resume-rollout, not both', command.words);
  if (from === undefined) {
    if (max !== undefined || deadline !== undefined) {
      throw new UsageError('--max-unavailable and --rollout-deadline go with --from GOLDEN', command.words);
    }
    return pause || resume ? { kind: 'pause', paused: pause } : undefined;
  }
  if (pause || resume)
    throw new UsageError('--from starts a roll-out; pause or resume it in a call of its own', command.words);
  if (max !== undefined && !/^\d+$/.test(max)) {
    throw new UsageError(`--max-unavailable takes a whole number, not "${max}"`, command.words);
  }
  return {
    kind: 'start',
    from,
    ...(max === undefined ? {} : { maxUnavailable: Number(max) }),
    ...(deadline === undefined ? {} : deadlineOf(deadline, command)),
  };
}

// a date is a time for the SDK to check; anything else is a duration from now
function deadlineOf(text: string, command: CommandSpec): { deadline: string } | { deadlineInMs: number } {
  if (/^\d{4}-/.test(text)) return { deadline: text };
  const parsed = durationSchema.safeParse(text);
  if (!parsed.success)
    throw new UsageError(`--rollout-deadline: ${parsed.error.issues[0]?.message}`, command.words);
  return { deadlineInMs: parsed.data };
}

/** A roll-out's line in `pool status`: `roll-out: 3/10 on golden-v2; rebuilding …`. */
export function rolloutLine(rollOut: RolloutStatus): string {
  if (rollOut.finishedAt !== null)
    return `roll-out: ${rollOut.onTarget}/${rollOut.total} on ${rollOut.to}, finished at ${rollOut.finishedAt}`;
  const parts = [`roll-out: ${rollOut.onTarget}/${rollOut.total} on ${rollOut.to}`];
  if (rollOut.paused) parts.push('paused');
  if (rollOut.rebuilding.length > 0) parts.push(`rebuilding ${rollOut.rebuilding.join(', ')}`);
  if (rollOut.claimed.length > 0) {
    const until = rollOut.deadline === null ? 'their release' : `release or ${rollOut.deadline}`;
    parts.push(`${rollOut.claimed.length} claimed wait for ${until}`);
  }
  if (rollOut.heldBack > 0) parts.push(`${rollOut.heldBack} kept running for the buffer`);
  return `${parts.join('; ')} (at most ${rollOut.maxUnavailable} at once)`;
}
