import { VdiError } from './errors.js';
import { parseRfc3339 } from './parse-time.js';
import { isValidVmName } from './validate.js';

/**
 * A pool's move to a new golden VM, as its settings ConfigMap records it (key `roll-out`). The members' own
 * `corral.dev/vdi-source` says which are done; `rebuilding` is the journal of the rebuilds under way, so a keeper
 * that stops half way leaves the next one what to finish.
 *
 * @category rollouts
 */
export interface PoolRollout {
  /** The golden VM the members are rebuilt from. */
  to: string;
  /** How many members may be rebuilding at once. */
  maxUnavailable: number;
  /** When it began (RFC 3339). */
  startedAt: string;
  /** When claimed members not yet rebuilt are taken back (RFC 3339); without it they wait for their release. */
  deadline?: string;
  /** Paused: the rebuilds under way finish, no new one starts. */
  paused?: boolean;
  /** The members being rebuilt now. */
  rebuilding: string[];
  /** When every member was on `to` (RFC 3339). */
  finishedAt?: string;
}

/** How many members a roll-out rebuilds at once unless told otherwise. @category rollouts */
export const defaultMaxUnavailable = 1;

function invalid(message: string, field: string): VdiError {
  return new VdiError('INVALID_INPUT', message, { details: { field } });
}

/**
 * Checks a `maxUnavailable`: a whole number from 1 to 100.
 *
 * @throws {@link VdiError} `INVALID_INPUT` naming the field.
 * @category rollouts
 */
export function checkMaxUnavailable(value: unknown): number {
  if (Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= 100)
    return value as number;
  throw invalid(
    `maxUnavailable ${String(value)} is not valid; use a whole number from 1 to 100 (members rebuilt at once).`,
    'maxUnavailable',
  );
}

/**
 * Reads a stored roll-out back, checking every field, as the settings reader does for a value edited by hand.
 * `isTarget` checks what it rolls to: a golden VM's name unless told (a container pool's is an image).
 *
 * @throws `Error` when the record is not a roll-out.
 */
export function readPoolRollout(
  raw: unknown,
  isTarget: (to: string) => boolean = isValidVmName,
): PoolRollout {
  const record = (raw ?? {}) as Partial<Record<keyof PoolRollout, unknown>>;
  const { to, maxUnavailable, startedAt, deadline, paused, rebuilding, finishedAt } = record;
  const isTime = (value: unknown) => typeof value === 'string' && parseRfc3339(value) !== undefined;
  const valid =
    typeof to === 'string' &&
    isTarget(to) &&
    Number.isSafeInteger(maxUnavailable) &&
    (maxUnavailable as number) >= 1 &&
    isTime(startedAt) &&
    (deadline === undefined || isTime(deadline)) &&
    (paused === undefined || typeof paused === 'boolean') &&
    Array.isArray(rebuilding) &&
    rebuilding.every((member) => typeof member === 'string' && isValidVmName(member)) &&
    (finishedAt === undefined || isTime(finishedAt));
  if (!valid) throw new Error('not a roll-out record');
  return {
    to: to as string,
    maxUnavailable: maxUnavailable as number,
    startedAt: startedAt as string,
    ...(deadline === undefined ? {} : { deadline: deadline as string }),
    ...(paused ? { paused: true } : {}),
    rebuilding: [...(rebuilding as string[])],
    ...(finishedAt === undefined ? {} : { finishedAt: finishedAt as string }),
  };
}
