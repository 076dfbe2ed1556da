import { VdiError } from '../errors.js';

/**
 * Why the reclaim policy takes a desktop back. `not-entitled`: its pool no longer lets its holder in, and the grace
 * has passed since the session engine first saw that (see `corral.dev/vdi-not-entitled-at`). `roll-out`: its pool
 * moves to a new golden VM and the roll-out's deadline came (see `corral.dev/vdi-roll-out-at`).
 *
 * @category sessions
 */
export type ReclaimReason = 'disconnect-grace' | 'max-duration' | 'idle' | 'not-entitled' | 'roll-out';

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
  /**
   * How long a desktop connected through broker consoles may carry no input before it is reclaimed, in ms; `0`
   * turns idle reclaim off. A desktop without a broker console open is never idle.
   * @defaultValue 0
   */
  idleTimeoutMs?: number;
  /** How long before an idle reclaim its holder is warned, in ms; `0` sends no warning. @defaultValue 0 */
  idleWarningMs?: number;
  /**
   * How long before a reclaim for the maximum age or a roll-out's deadline its holder is warned, in ms; `0`
   * sends no warning. A disconnect grace is not warned about: its holder has no console open to see it.
   * @defaultValue 0
   */
  reclaimWarningMs?: number;
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
  /** The last input a broker console carried to the desktop: the `corral.dev/vdi-input-at` mark or newer. */
  lastInputAt?: Date | undefined;
  /** When a roll-out of its pool takes the desktop back to rebuild it: the `corral.dev/vdi-roll-out-at` mark. */
  rollOutAt?: Date | undefined;
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
  /** Set while the holder is being warned of an idle reclaim: from `idleWarningMs` before it. */
  idleWarning?: boolean;
  /** Set while the holder is being warned of the pending reclaim, whatever its reason (see {@link reclaimWarningFor}). */
  reclaimWarning?: boolean;
}

/**
 * A reclaim that comes at `at` for `reason` unless something changes first.
 *
 * @category sessions
 */
export interface PendingReclaim {
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
 * - Idle: a desktop with a broker console open (through any live replica, or marked connected on its Lease) is reclaimed
 *   `idleTimeoutMs` after its last input, or after its connected period began when that is later. A desktop used
 *   only through a native client has no broker console, so it is never idle.
 * - Marks older than `acquiredAt` belong to an earlier claim of the member and are ignored.
 *
 * Every reclaim is due at its instant (`now >= reclaimAt`, which {@link describeSession} tells); when several are due the earliest
 * names the reason, and on a tie `max-duration` does, then `disconnect-grace`. An explicit release is not this policy's business.
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
export function describeSession(facts: SessionFacts, policy: ReclaimPolicy, now?: Date): SessionView {
  const next = earliestReclaim(facts, policy);
  const disconnectedAt = facts.consoleOpen ? undefined : graceStart(facts);
  const warned = now !== undefined && next !== undefined && isWarned(next, now, policy);
  return {
    connected: facts.consoleOpen,
    ...(disconnectedAt === undefined ? {} : { disconnectedAt }),
    ...(next === undefined ? {} : { reclaimAt: next.at, reclaimReason: next.reason }),
    ...(warned ? { reclaimWarning: true } : {}),
    ...(warned && next.reason === 'idle' ? { idleWarning: true } : {}),
  };
}

/**
 * Whether the holder of a claimed desktop is to be warned at `now` of its next reclaim: it is not due yet and comes
 * within the warning of its reason (`idleWarningMs` for idleness, `reclaimWarningMs` for the maximum age). The
 * warning names the reclaim's reason and instant; an instant that moves (input puts off an idle reclaim) is warned
 * about again.
 *
 * @example
 * ```ts
 * const warning = planReclaimWarning(facts, clock.now(), policy);
 * if (warning.kind === 'warn' && lease.metadata.annotations?.[reclaimWarnedAnnotation] !== warnedMark(warning)) warn();
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` as {@link planReclaim}.
 * @category sessions
 */
export function planReclaimWarning(
  facts: SessionFacts,
  now: Date,
  policy: ReclaimPolicy,
): ({ kind: 'warn' } & PendingReclaim) | { kind: 'none' } {
  checkDate(now, 'now');
  const next = earliestReclaim(facts, policy);
  return next !== undefined && isWarned(next, now, policy) ? { kind: 'warn', ...next } : { kind: 'none' };
}

/**
 * How long before a reclaim for `reason` its holder is warned, in ms: `idleWarningMs` for idleness,
 * `reclaimWarningMs` for the maximum age and a roll-out's deadline, none for a disconnect grace (nobody is connected
 * to see it) or a pool that no longer lets the holder in (its own `not-entitled` event says when).
 *
 * @category sessions
 */
export function reclaimWarningFor(reason: ReclaimReason, policy: ReclaimPolicy): number {
  if (reason === 'idle') return policy.idleWarningMs ?? 0;
  if (reason === 'max-duration' || reason === 'roll-out') return policy.reclaimWarningMs ?? 0;
  return 0;
}

// not due yet, and within the warning of its reason
function isWarned(next: PendingReclaim, now: Date, policy: ReclaimPolicy): boolean {
  const warningMs = reclaimWarningFor(next.reason, policy);
  if (warningMs === 0) return false;
  const left = next.at.getTime() - now.getTime();
  return left > 0 && left <= warningMs;
}

/**
 * The `corral.dev/vdi-reclaim-warned` value of a warning given: its reason and instant, so each is warned about once.
 *
 * @category sessions
 */
export function warnedMark(reclaim: PendingReclaim): string {
  return `${reclaim.reason} ${reclaim.at.toISOString()}`;
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
  const idleTimeoutMs = policy.idleTimeoutMs ?? 0;
  const idleFrom = idleTimeoutMs > 0 ? idleStart(facts) : undefined;
  const idleAt = idleFrom === undefined ? undefined : later(idleFrom, idleTimeoutMs);
  if (idleAt !== undefined) pending.push({ at: idleAt, reason: 'idle' });
  if (facts.rollOutAt !== undefined) pending.push({ at: facts.rollOutAt, reason: 'roll-out' });
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

/**
 * Whether a broker console of the desktop is open: in this process, or by the marks on its Lease (another
 * replica's). Only such a desktop can go idle.
 *
 * @category sessions
 */
export function hasBrokerConsole(facts: SessionFacts): boolean {
  return idleStart(facts) !== undefined;
}

// When the idle time of a desktop with a broker console began, or undefined when no broker console is open.
function idleStart(facts: SessionFacts): Date | undefined {
  const claimed = facts.acquiredAt.getTime();
  const connectedAt =
    facts.connectedAt && facts.connectedAt.getTime() >= claimed ? facts.connectedAt : undefined;
  const disconnectedAt =
    facts.disconnectedAt && facts.disconnectedAt.getTime() >= claimed ? facts.disconnectedAt : undefined;
  const marked =
    connectedAt !== undefined &&
    (disconnectedAt === undefined || connectedAt.getTime() > disconnectedAt.getTime());
  if (!facts.consoleOpen && !marked) return undefined;
  const starts = [claimed, connectedAt?.getTime() ?? claimed, facts.lastInputAt?.getTime() ?? claimed];
  return new Date(Math.max(...starts));
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
  if (facts.lastInputAt !== undefined) checkDate(facts.lastInputAt, 'lastInputAt');
  if (facts.rollOutAt !== undefined) checkDate(facts.rollOutAt, 'rollOutAt');
  if (typeof facts.consoleOpen !== 'boolean') {
    throw new VdiError('INVALID_INPUT', 'The session fact "consoleOpen" must be true or false.', {
      details: { field: 'consoleOpen' },
    });
  }
}

/**
 * Checks a reclaim policy: every value is whole, non-negative milliseconds.
 *
 * @throws {@link VdiError} `INVALID_INPUT` naming the bad value.
 * @category sessions
 */
export function checkReclaimPolicy(policy: ReclaimPolicy): void {
  for (const field of [
    'disconnectGraceMs',
    'maxSessionMs',
    'idleTimeoutMs',
    'idleWarningMs',
    'reclaimWarningMs',
  ] as const) {
    const value = policy[field] ?? 0;
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new VdiError(
        'INVALID_INPUT',
        `The reclaim policy's ${field} is ${String(value)}; use whole milliseconds of 0 or more (0 turns it off), for example parseDuration('15m').`,
        { details: { field, value } },
      );
    }
  }
}
