import { VdiError } from '../errors.js';

/** Why the reclaim policy takes a desktop back. @category sessions */
export type ReclaimReason = 'disconnect-grace' | 'max-duration';

/**
 * The reclaim policy.
 *
 * @category sessions
 */
export interface ReclaimPolicy {
  /** How long a desktop stays claimed after its last console closes, in ms; `0` turns disconnect reclaim off. */
  disconnectGraceMs: number;
  /** The maximum age of a claim in ms, also while a console is open; `0` means no maximum. */
  maxSessionMs: number;
}

/** The default policy: 15 minutes of disconnect grace and no maximum age. @category sessions */
export const defaultReclaimPolicy: Readonly<ReclaimPolicy> = {
  disconnectGraceMs: 15 * 60_000,
  maxSessionMs: 0,
};

/**
 * What {@link planReclaim} looks at for one claimed desktop.
 *
 * @category sessions
 */
export interface SessionFacts {
  /** When the claim began (the Lease's `acquireTime`). */
  acquiredAt: Date;
  /** The `corral.dev/vdi-connected-at` mark: start of the current or last connected period. */
  connectedAt?: Date | undefined;
  /** The `corral.dev/vdi-disconnected-at` mark: end of the last connected period. */
  disconnectedAt?: Date | undefined;
  /** Whether this process has a console of the desktop open now. */
  consoleOpen: boolean;
  /** When this process started; a desktop that was connected when the previous one stopped counts from here. */
  processStartedAt: Date;
}

/**
 * The decision for one desktop: keep it, with the next pending reclaim if there is one, or reclaim it now.
 *
 * @category sessions
 */
export type ReclaimPlan =
  | { kind: 'keep'; reclaimAt?: Date; reclaimReason?: ReclaimReason }
  | { kind: 'reclaim'; reason: ReclaimReason };

/**
 * The session part of a desktop view.
 *
 * @category sessions
 */
export interface SessionView {
  /** Whether a console of the desktop is open in this process. */
  connected: boolean;
  /** When the desktop's grace period began: its last disconnect, or this process's start after a restart. */
  disconnectedAt?: Date;
  /** The earliest pending reclaim; it may lie in the past until the next pass acts on it. */
  reclaimAt?: Date;
  reclaimReason?: ReclaimReason;
}

interface PendingReclaim {
  at: Date;
  reason: ReclaimReason;
}

/**
 * Decides whether the reclaim policy takes a claimed desktop back at `now`.
 *
 * - Maximum duration: a claim is reclaimed once it is `maxSessionMs` old, also with a console open.
 * - Disconnect grace: with no console open, a desktop is reclaimed `disconnectGraceMs` after its last
 *   disconnect. A desktop that never had a console is never reclaimed by grace, since its user may work through
 *   a client this process cannot see.
 * - Restarts: marks saying the desktop was connected, with no console open in this process, mean the previous
 *   process stopped while it was connected; its grace counts from `processStartedAt` (or from `connectedAt`
 *   if later). A desktop that was already disconnected keeps its recorded time.
 * - Marks older than `acquiredAt` belong to an earlier claim of the member and are ignored.
 *
 * Both reclaims are due at their instant (`now >= reclaimAt`); when both are due the earlier one names the
 * reason, and on a tie `max-duration` does. An explicit release is not this policy's business.
 *
 * @example
 * ```ts
 * const plan = planReclaim(
 *   { acquiredAt, connectedAt, disconnectedAt, consoleOpen: false, processStartedAt },
 *   clock.now(),
 *   { disconnectGraceMs: parseDuration('15m'), maxSessionMs: parseDuration('8h') },
 * );
 * if (plan.kind === 'reclaim') await reclaim(plan.reason);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when a date is invalid or a policy value is negative, fractional or
 *   not a number.
 * @category sessions
 */
export function planReclaim(facts: SessionFacts, now: Date, policy: ReclaimPolicy): ReclaimPlan {
  checkDate(now, 'now');
  const next = earliestReclaim(facts, policy);
  if (next === undefined) return { kind: 'keep' };
  if (now.getTime() >= next.at.getTime()) return { kind: 'reclaim', reason: next.reason };
  return { kind: 'keep', reclaimAt: next.at, reclaimReason: next.reason };
}

/**
 * The session fields of a desktop view: whether it is connected, since when its grace runs, and the earliest
 * pending reclaim, by the same rules as {@link planReclaim}.
 *
 * @example
 * ```ts
 * const { connected, reclaimAt, reclaimReason } = describeSession(facts, policy);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` as {@link planReclaim}.
 * @category sessions
 */
export function describeSession(facts: SessionFacts, policy: ReclaimPolicy): SessionView {
  const next = earliestReclaim(facts, policy);
  const disconnectedAt = facts.consoleOpen ? undefined : graceStart(facts);
  return {
    connected: facts.consoleOpen,
    ...(disconnectedAt === undefined ? {} : { disconnectedAt }),
    ...(next === undefined ? {} : { reclaimAt: next.at, reclaimReason: next.reason }),
  };
}

function earliestReclaim(facts: SessionFacts, policy: ReclaimPolicy): PendingReclaim | undefined {
  checkFacts(facts);
  checkReclaimPolicy(policy);
  const pending: PendingReclaim[] = [];
  const maxAt = policy.maxSessionMs > 0 ? later(facts.acquiredAt, policy.maxSessionMs) : undefined;
  if (maxAt !== undefined) pending.push({ at: maxAt, reason: 'max-duration' });
  const start = facts.consoleOpen || policy.disconnectGraceMs === 0 ? undefined : graceStart(facts);
  const graceAt = start === undefined ? undefined : later(start, policy.disconnectGraceMs);
  if (graceAt !== undefined) pending.push({ at: graceAt, reason: 'disconnect-grace' });
  // max-duration comes first, so a tie keeps it
  return pending.reduce<PendingReclaim | undefined>(
    (earliest, candidate) =>
      earliest === undefined || candidate.at.getTime() < earliest.at.getTime() ? candidate : earliest,
    undefined,
  );
}

// beyond the last instant a Date can hold, a reclaim never comes
const lastDateMs = 8.64e15;

function later(date: Date, ms: number): Date | undefined {
  const at = date.getTime() + ms;
  return at > lastDateMs ? undefined : new Date(at);
}

// When the grace of a desktop without an open console began, or undefined when it never had a console.
function graceStart(facts: SessionFacts): Date | undefined {
  const claimed = facts.acquiredAt.getTime();
  const connectedAt =
    facts.connectedAt && facts.connectedAt.getTime() >= claimed ? facts.connectedAt : undefined;
  const disconnectedAt =
    facts.disconnectedAt && facts.disconnectedAt.getTime() >= claimed ? facts.disconnectedAt : undefined;
  if (connectedAt === undefined) return disconnectedAt;
  if (disconnectedAt !== undefined && disconnectedAt.getTime() >= connectedAt.getTime())
    return disconnectedAt;
  // marked connected, yet no console here: the previous process stopped with it open
  return new Date(Math.max(connectedAt.getTime(), facts.processStartedAt.getTime()));
}

function checkDate(value: unknown, name: string): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new VdiError(
      'INVALID_INPUT',
      `The session fact "${name}" is not a valid Date; pass a Date such as clock.now().`,
      {
        details: { field: name },
      },
    );
  }
}

function checkFacts(facts: SessionFacts): void {
  checkDate(facts.acquiredAt, 'acquiredAt');
  checkDate(facts.processStartedAt, 'processStartedAt');
  if (facts.connectedAt !== undefined) checkDate(facts.connectedAt, 'connectedAt');
  if (facts.disconnectedAt !== undefined) checkDate(facts.disconnectedAt, 'disconnectedAt');
  if (typeof facts.consoleOpen !== 'boolean') {
    throw new VdiError('INVALID_INPUT', 'The session fact "consoleOpen" must be true or false.', {
      details: { field: 'consoleOpen' },
    });
  }
}

/**
 * Checks a reclaim policy: both values are whole, non-negative milliseconds.
 *
 * @throws {@link VdiError} `INVALID_INPUT` naming the bad value.
 * @category sessions
 */
export function checkReclaimPolicy(policy: ReclaimPolicy): void {
  for (const field of ['disconnectGraceMs', 'maxSessionMs'] as const) {
    const value = policy[field];
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new VdiError(
        'INVALID_INPUT',
        `The reclaim policy's ${field} is ${String(value)}; use whole milliseconds of 0 or more (0 turns it off), for example parseDuration('15m').`,
        { details: { field, value } },
      );
    }
  }
}
