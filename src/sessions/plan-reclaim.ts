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
  /** Whether a console of the desktop is open now in this process or in a live broker replica. */
  consoleOpen: boolean;
  /**
   * When the latest console entry of a replica that stopped heartbeating expired (see `corral.dev/vdi-consoles`):
   * its consoles went with it, so a connected period ended then unless a later disconnect says otherwise.
   */
  consolesLostAt?: Date | undefined;
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
 * - Restarts and dead replicas: marks saying the desktop was connected with no console open, or console entries
 *   of a replica that stopped heartbeating (`consolesLostAt`, after the last disconnect), mean a process stopped
 *   while it was connected; its grace counts from the later of that instant (`connectedAt`, or the entries'
 *   expiry) and `processStartedAt`. A desktop that was already disconnected keeps its recorded time.
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

/**
 * When the grace of a desktop began were no console open, or `undefined` when it never had a console: its last
 * disconnect, or for a connected period nobody closed (a process stopped with it open) the later of that
 * period's last sign and `processStartedAt`.
 */
export function graceStart(facts: SessionFacts): Date | undefined {
  const claimed = facts.acquiredAt.getTime();
  const since = (date: Date | undefined) => (date && date.getTime() >= claimed ? date.getTime() : undefined);
  const connectedAt = since(facts.connectedAt);
  const disconnectedAt = since(facts.disconnectedAt);
  const lostAt = since(facts.consolesLostAt);
  const unclosed = [connectedAt, lostAt].filter(
    (at): at is number => at !== undefined && (disconnectedAt === undefined || at > disconnectedAt),
  );
  if (unclosed.length === 0) return disconnectedAt === undefined ? undefined : new Date(disconnectedAt);
  // connected, yet nobody saw it close: the process that served it stopped with it open
  return new Date(Math.max(...unclosed, facts.processStartedAt.getTime()));
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
  if (facts.consolesLostAt !== undefined) checkDate(facts.consolesLostAt, 'consolesLostAt');
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
