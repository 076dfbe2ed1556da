import {
  connectedAtAnnotation,
  consolesAnnotation,
  disconnectedAtAnnotation,
  inputAtAnnotation,
  rollOutAtAnnotation,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { parseRfc3339 } from '../parse-time.js';
import { type ClaimKey, claimKeyOf, isSameClaim } from './claim-key.js';
import {
  type ConsolePresence,
  formatConsoleEntries,
  judgeConsoleEntries,
  readConsoleEntries,
} from './console-entries.js';
import { graceStart, planReclaim, type SessionFacts } from './plan-reclaim.js';
/**
 * What this process knows of one claim's consoles: how many are open, when the first of them opened and the last
 * closed, and whether the Lease carries that yet (`written` equals `version`). It supersedes this replica's
 * entry in the Lease's `corral.dev/vdi-consoles`, which may be behind it.
 *
 * @category sessions
 */
export interface ConsoleState {
  claim: ClaimKey;
  open: number;
  connectedAt: Date | undefined;
  disconnectedAt: Date | undefined;
  version: number;
  written: number;
}

export function parseMark(lease: LeaseObject, key: string): Date | undefined {
  const text = lease.metadata.annotations?.[key];
  return text === undefined ? undefined : parseRfc3339(text);
}

export function acquiredAtOf(lease: LeaseObject): Date | undefined {
  for (const text of [lease.spec.acquireTime, lease.metadata.creationTimestamp, lease.spec.renewTime]) {
    const parsed = text === undefined ? undefined : parseRfc3339(text);
    if (parsed) return parsed;
  }
  return undefined;
}

/** Where {@link sessionFactsOf} reads a claim from besides its Lease. @category sessions */
export interface SessionFactsContext {
  /** This process's replica ID, whose entry `consoles` supersedes. */
  replicaId: string;
  now: Date;
  processStartedAt: Date;
}

/** The console entries of a claim at `now`, but for this replica's own when its state supersedes it. */
function othersOf(
  lease: LeaseObject,
  own: ConsoleState | undefined,
  acquiredAt: Date,
  { replicaId, now }: SessionFactsContext,
): ConsolePresence {
  const entries = readConsoleEntries(lease);
  if (own) entries.delete(replicaId);
  return judgeConsoleEntries(entries, now, acquiredAt);
}

/** This process's console state of the claim the Lease records, if it is of that claim. */
export function ownState(lease: LeaseObject, consoles: ConsoleState | undefined): ConsoleState | undefined {
  return consoles && isSameClaim(consoles.claim, claimKeyOf(lease)) ? consoles : undefined;
}

function latest(...dates: (Date | undefined)[]): Date | undefined {
  return dates.reduce<Date | undefined>(
    (last, date) => (date !== undefined && (last === undefined || date > last) ? date : last),
    undefined,
  );
}

/**
 * The facts {@link planReclaim} needs about one claim, from its Lease: its marks, and whether a console is open
 * by the console entries of the live replicas (`corral.dev/vdi-consoles`), with this process's console state of
 * the same claim in place of its own entry, since it is at least as new. A dead replica's entries (past their
 * expiry) give `consolesLostAt`.
 *
 * @returns `undefined` when the Lease carries no readable start.
 * @category sessions
 */
export function sessionFactsOf(
  lease: LeaseObject,
  consoles: ConsoleState | undefined,
  context: SessionFactsContext,
  input?: Date,
): SessionFacts | undefined {
  const acquiredAt = acquiredAtOf(lease);
  if (acquiredAt === undefined) return undefined;
  const own = ownState(lease, consoles);
  const { live, lostAt } = othersOf(lease, own, acquiredAt, context);
  const marked = parseMark(lease, inputAtAnnotation);
  // input this process saw may not be written yet
  const lastInputAt =
    input !== undefined && (marked === undefined || input.getTime() > marked.getTime()) ? input : marked;
  const rollOutAt = parseMark(lease, rollOutAtAnnotation);
  return {
    acquiredAt,
    connectedAt: parseMark(lease, connectedAtAnnotation),
    // this process's last close may not be written yet
    disconnectedAt: latest(parseMark(lease, disconnectedAtAnnotation), own?.disconnectedAt),
    consoleOpen: live.size > 0 || (own?.open ?? 0) > 0,
    consolesLostAt: lostAt,
    processStartedAt: context.processStartedAt,
    ...(lastInputAt === undefined ? {} : { lastInputAt }),
    ...(rollOutAt === undefined ? {} : { rollOutAt }),
  };
}

/** What {@link withConsoleMarks} writes for this replica. @category sessions */
export interface ConsoleMarksInput extends SessionFactsContext {
  /** This process's console state of the claim; `undefined` leaves its entry as the Lease has it. */
  consoles: ConsoleState | undefined;
  /** How long this replica's entry counts without a heartbeat. */
  expiryMs: number;
  /** Rewrite this replica's entry (count, `seenAt`) although it is live: on a heartbeat or a write made anyway. */
  refresh: boolean;
}

/**
 * The Lease with this replica's console entry and the session marks brought up to date, or `undefined` when it
 * already carries them. This replica's entry is there while it has consoles open, with their count and `seenAt`
 * as of the last `refresh` (a live entry is otherwise left as it is, so a second console costs no write), and
 * goes when none are; dead replicas' entries are dropped. The first console open anywhere after none writes
 * `corral.dev/vdi-connected-at`; when none is left open (the last close anywhere, or a dead replica's entries
 * dropped) `corral.dev/vdi-disconnected-at` gets the instant the grace runs from, so the reading of
 * {@link sessionFactsOf} is the same before and after the write.
 *
 * @category sessions
 */
export function withConsoleMarks(lease: LeaseObject, input: ConsoleMarksInput): LeaseObject | undefined {
  const acquiredAt = acquiredAtOf(lease);
  if (acquiredAt === undefined) return undefined;
  const { replicaId, now } = input;
  const own = ownState(lease, input.consoles);
  const recorded = judgeConsoleEntries(readConsoleEntries(lease), now, acquiredAt);
  const facts = sessionFactsOf(lease, own, input) as SessionFacts;
  const next = othersOf(lease, own, acquiredAt, input).live;
  const kept = recorded.live.get(replicaId);
  if (own && own.open > 0) {
    const fresh = { open: own.open, seenAt: now, expiresAt: new Date(now.getTime() + input.expiryMs) };
    next.set(replicaId, kept && !input.refresh ? kept : fresh);
  }
  const annotations = { ...lease.metadata.annotations };
  const entries = formatConsoleEntries(next);
  if (entries === undefined) delete annotations[consolesAnnotation];
  else annotations[consolesAnnotation] = entries;
  const lost = facts.consolesLostAt !== undefined;
  if (next.size > 0 && recorded.live.size === 0 && own?.connectedAt) {
    // a connected period begins; a dead replica's ends where the grace would have run from
    const ended = lost ? graceStart(facts) : undefined;
    if (ended) annotations[disconnectedAtAnnotation] = ended.toISOString();
    annotations[connectedAtAnnotation] = own.connectedAt.toISOString();
  } else if (next.size === 0 && (recorded.live.size > 0 || lost || own?.disconnectedAt)) {
    const ended = graceStart(facts);
    if (ended) annotations[disconnectedAtAnnotation] = ended.toISOString();
  }
  const current = lease.metadata.annotations ?? {};
  const changed = [consolesAnnotation, connectedAtAnnotation, disconnectedAtAnnotation].some(
    (key) => annotations[key] !== current[key],
  );
  return changed ? { ...lease, metadata: { ...lease.metadata, annotations } } : undefined;
}
