import { removalHolder } from '../../src/keys.js';
import { leaseNameFor } from '../../src/lease-name.js';
import type {
  CallRecord,
  Change,
  History,
  HistoryRecord,
  LaneUser,
  LeaseChange,
  LeaseWrite,
  RestState,
  Violation,
  VmChange,
  VmiChange,
} from './history.js';

// A change is received a little after the call that caused it returned; this much later still counts as its.
const receiptSlackMs = 2_000;

const releaseOps = new Set(['release', 'unassign']);
const claimOps = new Set(['claim', 'assign']);
const policyOps = new Set(['engine-pass']);

/** One claim of a member: a Lease session from its first version to the change that ended it. */
interface Session {
  member: string;
  pool: string | undefined;
  holder: string;
  sessionId: string | undefined;
  versions: LeaseChange[];
  end?: { change: LeaseChange; expired: boolean };
  /** The VMI of another identity's claim that existed when this claim's Lease was first written. */
  inherited?: { vmi: VmiChange; before: Session };
  /** How the member was first presented with this claim's session: after the inherited VMI was gone, or early. */
  handout?: 'clean' | 'early';
}

const isClaim = (lease: LeaseChange): lease is LeaseChange & { member: string } =>
  lease.member !== undefined && lease.holder !== undefined && lease.holder !== removalHolder;

function expiresAt(lease: LeaseChange): number {
  const renewed = lease.renewTime === undefined ? Number.NaN : Date.parse(lease.renewTime);
  // A Lease without a readable time binds nobody, as the SDK's own rule says.
  if (!Number.isFinite(renewed) || lease.durationSeconds === undefined) return Number.NEGATIVE_INFINITY;
  return renewed + lease.durationSeconds * 1000;
}

const isLiveAt = (lease: LeaseChange, now: number) => expiresAt(lease) > now;

function describeEnd(session: Session): string {
  if (!session.end) return 'had not ended';
  const how = session.end.change.type === 'DELETED' ? 'its Lease was deleted' : 'its Lease was taken over';
  return session.end.expired ? `had expired and ${how}` : `was live when ${how}`;
}

const sameSession = (a: LeaseChange, b: LeaseChange) => a.holder === b.holder && a.sessionId === b.sessionId;

// The SDK's own rule: only the mark of the Lease's current session counts.
const isResetDue = (lease: LeaseChange) =>
  lease.resetDue !== undefined && lease.resetDue === (lease.sessionId ?? '');

function handoutViolation(session: Session, how: string, evidence: HistoryRecord[]): Violation {
  const { vmi, before } = session.inherited ?? {};
  return {
    invariant: 'vmi-at-handout',
    member: session.member,
    message: `${session.member} was handed to ${session.holder} (${how}) while the VMI ${vmi?.uid} of ${before?.holder}'s claim still existed (phase ${vmi?.phase ?? 'unknown'}); that claim ${before ? describeEnd(before) : 'had not ended'}`,
    evidence: [
      ...(before?.versions.slice(-1) ?? []),
      ...(before?.end ? [before.end.change] : []),
      ...(vmi ? [vmi] : []),
      ...evidence,
    ],
  };
}

/** The history's changes in the cluster's order: resourceVersions grow across every kind of object. */
function orderChanges(changes: readonly Change[]): Change[] {
  return [...changes].sort((a, b) => a.resourceVersion - b.resourceVersion);
}

interface Replay {
  sessions: Session[];
  violations: Violation[];
}

/** Walks the changes in order, cutting Lease versions into sessions and checking what holds at each moment. */
function replay(changes: readonly Change[]): Replay {
  const sessions: Session[] = [];
  const violations: Violation[] = [];
  const leases = new Map<string, LeaseChange>();
  const current = new Map<string, Session>();
  const lastHolder = new Map<string, Session>();
  const vmis = new Map<string, VmiChange>();
  const doubled = new Set<string>();
  let now = Number.NEGATIVE_INFINITY;

  const endSession = (member: string, change: LeaseChange, previous: LeaseChange) => {
    const session = current.get(member);
    if (!session) return;
    session.end = { change, expired: !isLiveAt(previous, now) };
    current.delete(member);
    // A takeover given back before its reset never had the member: the guest still running is the holder's before.
    if (session.handout) lastHolder.set(member, session);
  };

  // A takeover's Lease carries the reset-due mark until the member is reset: only a version without it hands out.
  const noteInherited = (session: Session) => {
    const before = lastHolder.get(session.member);
    const vmi = vmis.get(session.member);
    if (before && before.holder !== session.holder && vmi) session.inherited = { vmi, before };
  };

  // A claim hands its member out when the member is presented with its session: a Lease alone gives its holder no
  // console and no connect while the member is not running, which it is not while it goes down.
  const checkHandout = (change: VmChange) => {
    const session = current.get(change.name);
    if (!session || session.handout || change.sessionId !== session.sessionId) return;
    const early =
      session.inherited !== undefined && vmis.get(session.member)?.uid === session.inherited.vmi.uid;
    session.handout = early ? 'early' : 'clean';
    if (early) violations.push(handoutViolation(session, 'presented with its session', [change]));
  };

  const checkIdentity = (change: LeaseChange) => {
    if (!isClaim(change) || change.releasing !== undefined) return;
    const held = [...leases.values()].filter(
      (lease) =>
        isClaim(lease) &&
        lease.holder === change.holder &&
        lease.pool === change.pool &&
        lease.releasing === undefined &&
        isLiveAt(lease, now),
    );
    const key = `${change.holder}\u0000${change.pool}`;
    if (held.length < 2) {
      doubled.delete(key);
      return;
    }
    if (doubled.has(key)) return;
    doubled.add(key);
    violations.push({
      invariant: 'identity-two-desktops',
      member: change.member,
      message: `${change.holder} held ${held.map((lease) => lease.member).join(' and ')} of pool ${change.pool} at once`,
      evidence: held,
    });
  };

  for (const change of orderChanges(changes)) {
    if (change.kind === 'clock') now = Math.max(now, change.now);
    if (change.kind === 'vmi') {
      if (change.type === 'DELETED') vmis.delete(change.name);
      else vmis.set(change.name, change);
    }
    if (change.kind === 'vm' && change.type !== 'DELETED') checkHandout(change);
    if (change.kind !== 'lease' || change.member === undefined) continue;
    const { member } = change;
    const previous = leases.get(change.name);
    if (change.type === 'DELETED') {
      leases.delete(change.name);
      if (previous) endSession(member, change, previous);
      continue;
    }
    leases.set(change.name, change);
    if (previous && !sameSession(previous, change)) endSession(member, change, previous);
    if (!isClaim(change)) continue;
    let session = current.get(member);
    if (session) session.versions.push(change);
    else {
      session = {
        member,
        pool: change.pool,
        holder: change.holder ?? '',
        sessionId: change.sessionId,
        versions: [change],
      };
      noteInherited(session);
      current.set(member, session);
      sessions.push(session);
    }
    checkIdentity(change);
  }
  return { sessions, violations };
}

const claimAnswers = (calls: readonly CallRecord[]) =>
  calls.filter(
    (call): call is CallRecord & { outcome: { ok: true; answer: { member: string; sessionId: string } } } =>
      call.outcome.ok &&
      call.outcome.answer?.member !== undefined &&
      call.outcome.answer.sessionId !== undefined &&
      (call.op === 'claim' || call.op === 'assign'),
  );

/** No claim is told to two identities, and every claim told to a caller is one its member's Lease had. */
function checkAnswers(calls: readonly CallRecord[], sessions: readonly Session[]): Violation[] {
  const violations: Violation[] = [];
  const toldTo = new Map<string, CallRecord>();
  for (const call of claimAnswers(calls)) {
    const { member, sessionId } = call.outcome.answer;
    const key = `${member}\u0000${sessionId}`;
    const first = toldTo.get(key);
    if (first && first.identity !== call.identity)
      violations.push({
        invariant: 'claim-told-twice',
        member,
        message: `the claim ${sessionId} of ${member} was told to ${first.identity} and to ${call.identity}`,
        evidence: [first, call],
      });
    toldTo.set(key, first ?? call);
    const session = sessions.find((found) => found.member === member && found.sessionId === sessionId);
    if (!session || session.holder !== call.identity)
      violations.push({
        invariant: 'two-holders',
        member,
        message: `${call.identity} was told it holds ${member} (session ${sessionId}), a claim the member's Lease never gave it`,
        evidence: [call, ...(session?.versions.slice(0, 1) ?? [])],
      });
  }
  return violations;
}

/** When a caller is told it holds a member, nobody else holds that member unless its claim ran out. */
function checkHolders(calls: readonly CallRecord[], sessions: readonly Session[]): Violation[] {
  const violations: Violation[] = [];
  for (const call of claimAnswers(calls)) {
    const { member, sessionId } = call.outcome.answer;
    const mine = sessions.find((found) => found.member === member && found.sessionId === sessionId);
    // An unknown session is reported by checkAnswers; an expired one may be taken, by policy.
    if (!mine || mine.end?.expired) continue;
    // The other claim was received before the answer, so it was written before the answer came back.
    const other = sessions.find(
      (found) =>
        found.member === member &&
        found.holder !== call.identity &&
        (found.versions[0]?.at ?? Number.POSITIVE_INFINITY) < call.endedAt &&
        (found.end === undefined || found.end.change.at > call.endedAt) &&
        found.versions.some((version) => version.at <= call.endedAt && version.releasing === undefined),
    );
    if (!other || (mine.versions[0]?.resourceVersion ?? 0) > (other.versions[0]?.resourceVersion ?? 0))
      continue;
    violations.push({
      invariant: 'two-holders',
      member,
      message: `${call.identity} was told it holds ${member} while ${other.holder}'s claim ${other.sessionId} held it`,
      evidence: [
        ...mine.versions.slice(-1),
        ...(mine.end ? [mine.end.change] : []),
        ...other.versions.slice(0, 1),
        call,
      ],
    });
  }
  return violations;
}

// Audit times are the apiserver's, call times the driver's, on one machine clock; both are cut to whole ms.
const clockRoundingMs = 1;

/** Who wrote what: each audited write with the calls its lane had in flight while the apiserver handled it. */
interface Writers {
  calls: readonly CallRecord[];
  writes: readonly LeaseWrite[];
  laneOf: Map<string, LaneUser>;
}

function callsInFlight(writers: Writers, write: LeaseWrite): CallRecord[] {
  const lane = writers.laneOf.get(write.user);
  if (!lane) return [];
  return writers.calls.filter(
    (call) =>
      call.proc === lane.proc &&
      call.lane === lane.lane &&
      call.startedAt <= write.receivedAt + clockRoundingMs &&
      write.at <= call.endedAt + clockRoundingMs,
  );
}

const leaseNameOf = (session: Session) => session.versions[0]?.name ?? '';

/** The audited write that started a session: the first that sent its holder and session ID. */
function startWriteOf(writers: Writers, session: Session): LeaseWrite | undefined {
  return writers.writes.find(
    (write) =>
      write.ok &&
      write.verb !== 'delete' &&
      write.name === leaseNameOf(session) &&
      write.holder === session.holder &&
      write.sessionId === session.sessionId,
  );
}

/**
 * The audited write that ended a session: the delete that named its Lease object's uid (the audit's order of
 * completion need not be the order the writes took effect in), or the write of the session that followed.
 */
function endWriteOf(writers: Writers, session: Session, started: LeaseWrite): LeaseWrite | undefined {
  const end = session.end?.change;
  if (!end) return undefined;
  const uid = session.versions.at(-1)?.uid;
  return writers.writes.find(
    (write) =>
      write.ok &&
      write.name === leaseNameOf(session) &&
      write.at >= started.at &&
      (end.type === 'DELETED'
        ? write.verb === 'delete' && (uid === undefined || write.preconditionUid === uid)
        : write.verb !== 'delete' && write.holder === end.holder && write.sessionId === end.sessionId),
  );
}

/** When a claim stopped being its claim call's: a release marked it its own, or it ended. */
function takenFromItsCallAt(writers: Writers, session: Session, started: LeaseWrite): number {
  const marked = writers.writes.find(
    (write) =>
      write.ok &&
      write.name === started.name &&
      write.sessionId === session.sessionId &&
      write.releasing !== undefined &&
      write.at >= started.at,
  );
  const ended = endWriteOf(writers, session, started);
  return Math.min(marked?.at ?? Number.POSITIVE_INFINITY, ended?.at ?? Number.POSITIVE_INFINITY);
}

const describeCalls = (calls: readonly CallRecord[]) =>
  calls.length === 0
    ? 'no call in flight'
    : calls.map((call) => `${call.op} ${call.seq} by ${call.identity ?? 'nobody'}`).join(', ');

/**
 * Every claim ends inside a call entitled to end it: its holder's release, an admin's unassign, a pass of the
 * policy engine, a call that took it over once it had expired, or the claim call that wrote it and gave it back.
 * The audit says which lane ended it and when, so a write that landed after its call returned is seen too.
 */
function checkEnds(writers: Writers, sessions: readonly Session[]): Violation[] {
  const violations: Violation[] = [];
  for (const session of sessions) {
    if (!session.end) continue;
    const started = startWriteOf(writers, session);
    const ended = started && endWriteOf(writers, session, started);
    const inFlight = ended ? callsInFlight(writers, ended) : [];
    const entitled = inFlight.some(
      (call) =>
        policyOps.has(call.op) ||
        (releaseOps.has(call.op) &&
          call.member === session.member &&
          (call.asAdmin === true || call.identity === session.holder)) ||
        session.end?.expired === true ||
        (started !== undefined && callsInFlight(writers, started).includes(call)),
    );
    if (entitled) continue;
    const how =
      session.end.change.type === 'DELETED' ? 'Lease deleted' : `Lease taken by ${session.end.change.holder}`;
    violations.push({
      invariant: 'claim-ended-without-cause',
      member: session.member,
      message: ended
        ? `${session.holder}'s ${session.end.expired ? 'expired' : 'live'} claim ${session.sessionId} of ${session.member} ended (${how}) by ${ended.user} during ${describeCalls(inFlight)}: none is entitled to end it`
        : `${session.holder}'s claim ${session.sessionId} of ${session.member} ended (${how}) with no audited write that ended it`,
      evidence: [...session.versions.slice(-1), session.end.change, ...(ended ? [ended] : []), ...inFlight],
    });
  }
  return violations;
}

/**
 * Every claim written is told to a caller, or was written by a claim call of its holder that failed, or that was
 * still running when the claim stopped being its own (it gave the claim back, or a release or an unassign marked it
 * releasing, or a takeover after expiry ended it; {@link checkEnds} judges each end), and the call went on. A claim that nobody was told of and that
 * outlives the call that wrote it holds a member for nobody.
 */
function checkWrittenClaims(writers: Writers, sessions: readonly Session[]): Violation[] {
  const told = new Set(
    claimAnswers(writers.calls).map(
      (call) => `${call.outcome.answer.member}\u0000${call.outcome.answer.sessionId}`,
    ),
  );
  const violations: Violation[] = [];
  for (const session of sessions) {
    if (told.has(`${session.member}\u0000${session.sessionId}`)) continue;
    const started = startWriteOf(writers, session);
    const writtenDuring = started ? callsInFlight(writers, started) : [];
    const takenAt = started ? takenFromItsCallAt(writers, session, started) : Number.POSITIVE_INFINITY;
    const explained = writtenDuring.some(
      (call) =>
        claimOps.has(call.op) &&
        call.identity === session.holder &&
        (!call.outcome.ok || takenAt <= call.endedAt + clockRoundingMs),
    );
    if (explained) continue;
    violations.push({
      invariant: 'claim-written-untold',
      member: session.member,
      message: started
        ? `${session.holder}'s claim ${session.sessionId} of ${session.member} was written by ${started.user} during ${describeCalls(writtenDuring)}, and no call was told of it or failed`
        : `${session.holder}'s claim ${session.sessionId} of ${session.member} has no audited write`,
      evidence: [...session.versions.slice(0, 1), ...(started ? [started] : []), ...writtenDuring],
    });
  }
  return violations;
}

/**
 * A claim's caller is told it holds a member only once the previous identity's VMI is gone. The VMI's deletion is
 * received a little after it happened, so only one received later than the answer plus the slack is a violation.
 */
function checkAnswersAfterReset(
  calls: readonly CallRecord[],
  changes: readonly Change[],
  sessions: readonly Session[],
): Violation[] {
  const deletedAt = new Map<string, number>();
  for (const change of changes)
    if (change.kind === 'vmi' && change.type === 'DELETED') deletedAt.set(change.uid, change.at);
  const violations: Violation[] = [];
  const judged = new Set<Session>();
  for (const call of claimAnswers(calls)) {
    const { member, sessionId } = call.outcome.answer;
    const session = sessions.find((found) => found.member === member && found.sessionId === sessionId);
    // a Lease that handed the member out too early is reported already, once per claim
    if (!session?.inherited || judged.has(session) || session.handout === 'early') continue;
    const gone = deletedAt.get(session.inherited.vmi.uid) ?? Number.POSITIVE_INFINITY;
    if (gone <= call.endedAt + receiptSlackMs) continue;
    judged.add(session);
    violations.push(
      handoutViolation(session, `answered ${call.op} ${call.seq} of process ${call.proc}`, [call]),
    );
  }
  return violations;
}

/**
 * At rest, each VM's presentation copy names its Lease's holder (once a takeover's reset is done), and a member
 * without a claim shows nobody.
 */
function checkRest(rest: RestState): Violation[] {
  const violations: Violation[] = [];
  const leaseOf = new Map(rest.leases.filter(isClaim).map((lease) => [lease.member, lease]));
  // a claim expired by then binds nobody, whatever its member shows: the next claim takes it and writes its copy
  const expired = (lease: LeaseChange | undefined) => lease !== undefined && !isLiveAt(lease, rest.now);
  for (const vm of rest.vms) {
    if (vm.pool === undefined) continue;
    const lease = leaseOf.get(vm.name);
    if (expired(lease)) continue;
    // a takeover whose reset is still due is not handed out yet: its holder's next claim or start presents it
    if (lease?.holder === vm.assignedTo || (lease && isResetDue(lease))) continue;
    violations.push({
      invariant: 'presentation-at-rest',
      member: vm.name,
      message: `at rest ${vm.name} shows ${vm.assignedTo ?? 'nobody'} while its Lease names ${lease?.holder ?? 'nobody'}`,
      evidence: [vm, ...(lease ? [lease] : [])],
    });
  }
  const vmNames = new Set(rest.vms.map((vm) => vm.name));
  for (const [member, lease] of leaseOf)
    if (!vmNames.has(member) && !expired(lease))
      violations.push({
        invariant: 'presentation-at-rest',
        member,
        message: `at rest the Lease of ${member} names ${lease.holder} but the member does not exist${marksOf(lease)}`,
        evidence: [lease],
      });
  return violations;
}

// The marks a claim's Lease carries, for a violation's message: a release or a takeover reset under way.
function marksOf(lease: LeaseChange): string {
  const marks = [
    ...(lease.releasing ? [`releasing ${lease.releasing}`] : []),
    ...(lease.resetDue ? [`reset-due ${lease.resetDue}`] : []),
  ];
  return `; session ${lease.sessionId ?? 'none'}, renewed ${lease.renewTime ?? 'never'}${marks.length > 0 ? `, marked ${marks.join(', ')}` : ''}`;
}

/** Every failure is a `VdiError` whose code `docs/errors.md` documents. */
function checkErrors(calls: readonly CallRecord[], documented: readonly string[]): Violation[] {
  const codes = new Set(documented);
  return calls.flatMap((call): Violation[] => {
    if (call.outcome.ok) return [];
    const { error } = call.outcome;
    if (error.name === 'VdiError' && error.code !== undefined && codes.has(error.code)) return [];
    return [
      {
        invariant: 'undocumented-error',
        ...(call.member === undefined ? {} : { member: call.member }),
        message: `${call.op} failed with ${error.name}${error.code === undefined ? '' : ` ${error.code}`}, not a documented VdiError: ${error.message}`,
        evidence: [call],
      },
    ];
  });
}

/** Checks every invariant of a storm's history; an empty answer means none was broken. */
export function checkHistory(history: History): Violation[] {
  const { sessions, violations } = replay(history.changes);
  const writers: Writers = {
    calls: history.calls,
    writes: history.leaseWrites,
    laneOf: new Map(history.laneUsers.map((lane) => [lane.user, lane])),
  };
  return [
    ...violations,
    ...checkAnswers(history.calls, sessions),
    ...checkHolders(history.calls, sessions),
    ...checkAnswersAfterReset(history.calls, history.changes, sessions),
    ...checkEnds(writers, sessions),
    ...checkWrittenClaims(writers, sessions),
    ...(history.rest ? checkRest(history.rest) : []),
    ...checkErrors(history.calls, history.documentedCodes),
  ];
}

/**
 * Claims an observer saw that no call made or ended: a claim's Lease that the claim call writing it deleted or
 * gave up again before telling anyone (an outside checker sees a Lease end with no release or unassign in flight,
 * and a session nobody was told), and, before the engine pass, a stopped member showing a holder without a Lease.
 * {@link checkHistory} allows both (the call gave the Lease back; the pass removes the copy); these are the
 * figures of what a reader of the Leases and VMs meets meanwhile.
 */
export function findUnmadeClaims(history: History): Violation[] {
  const { sessions } = replay(history.changes);
  const writers: Writers = {
    calls: history.calls,
    writes: history.leaseWrites,
    laneOf: new Map(history.laneUsers.map((lane) => [lane.user, lane])),
  };
  const told = new Set(
    claimAnswers(history.calls).map(
      (call) => `${call.outcome.answer.member}\u0000${call.outcome.answer.sessionId}`,
    ),
  );
  const found: Violation[] = [];
  for (const session of sessions) {
    if (!session.end || told.has(`${session.member}\u0000${session.sessionId}`)) continue;
    const started = startWriteOf(writers, session);
    const ended = started && endWriteOf(writers, session, started);
    if (!started || !ended) continue;
    const endedDuring = callsInFlight(writers, ended);
    const byOwnCall = callsInFlight(writers, started).filter(
      (call) => claimOps.has(call.op) && call.identity === session.holder && endedDuring.includes(call),
    );
    const entitled = endedDuring.some(
      (call) =>
        policyOps.has(call.op) ||
        (releaseOps.has(call.op) &&
          call.member === session.member &&
          (call.asAdmin === true || call.identity === session.holder)),
    );
    if (byOwnCall.length === 0 || entitled || session.end.expired) continue;
    const take = !wasShownAsClaim(history.changes, session, started.at, ended.at);
    found.push({
      invariant: take ? 'take-given-back' : 'claim-given-back',
      member: session.member,
      message: `${session.holder}'s ${take ? 'take (never a claim by the rule: its member was going down, deleting or gone throughout)' : 'claim'} ${session.sessionId} of ${session.member} was written (${started.verb}) by ${started.user} and ended (${ended.verb}) ${ended.at - started.at} ms later by the same call, ${describeCalls(byOwnCall)}, which told nobody of it${session.versions.some((version) => version.releasing !== undefined) ? '' : '; it was never marked releasing'}`,
      evidence: [...session.versions, session.end.change, started, ended, ...byOwnCall],
    });
  }
  for (const vm of history.restBeforePass?.vms ?? []) {
    if (vm.pool === undefined || vm.assignedTo === undefined) continue;
    if (history.restBeforePass?.leases.some((lease) => isClaim(lease) && lease.member === vm.name)) continue;
    found.push({
      invariant: 'copy-before-pass',
      member: vm.name,
      message: `before the engine pass ${vm.name} (${vm.printableStatus ?? 'no status'}) showed ${vm.assignedTo} (session ${vm.sessionId ?? 'none'}) with no Lease`,
      evidence: [vm],
    });
  }
  return found;
}

/**
 * Whether a reader following the SDK's rule (`isTakeUnderWay`) showed a Lease as a claim at some moment from its
 * write to its end: its member there, not being deleted, and either not going down (no instance while a stop is
 * asked) or showing the Lease's session. A take given back that never was one is not a claim anybody saw.
 */
function wasShownAsClaim(changes: readonly Change[], session: Session, from: number, to: number): boolean {
  let vm: VmChange | undefined;
  let vmi: VmiChange | undefined;
  const shown = () =>
    vm !== undefined &&
    vm.type !== 'DELETED' &&
    vm.printableStatus !== 'Terminating' &&
    (vm.sessionId === session.sessionId ||
      vmi === undefined ||
      vmi.type === 'DELETED' ||
      vm.runStrategy !== 'Halted');
  for (const change of changes) {
    if (change.at >= to) break;
    if (change.name !== session.member) continue;
    if (change.kind === 'vm') vm = change;
    else if (change.kind === 'vmi') vmi = change;
    else continue;
    if (change.at >= from && shown()) return true;
  }
  return shown();
}

// How many of a member's records a violation at rest shows.
const lastRecordsAtRest = 16;

/**
 * The records around a violation: its evidence and every record of its member within `windowMs` of it; for a
 * violation at rest, the member's last records however long before.
 */
export function sliceHistory(history: History, violation: Violation, windowMs = 3_000): HistoryRecord[] {
  const times = violation.evidence.map((record) => (record.kind === 'call' ? record.startedAt : record.at));
  const from = Math.min(...times) - windowMs;
  const to = Math.max(...times) + windowMs;
  const timeOf = (record: HistoryRecord) => (record.kind === 'call' ? record.startedAt : record.at);
  const ofMember = (record: HistoryRecord) =>
    violation.member === undefined ||
    (record.kind === 'call'
      ? record.member === violation.member ||
        (record.outcome.ok && record.outcome.answer?.member === violation.member)
      : record.kind === 'clock' ||
        record.name === violation.member ||
        record.name === leaseNameFor(violation.member) ||
        (record.kind === 'lease' && record.member === violation.member));
  const records = [...history.calls, ...history.changes, ...history.leaseWrites]
    .filter(ofMember)
    .sort((a, b) => timeOf(a) - timeOf(b));
  const around = records.filter((record) => timeOf(record) >= from && timeOf(record) <= to);
  // a state at rest is seen long after what made it: then the member's last records tell how it came about
  const aboutMember = (record: HistoryRecord) => record.kind !== 'clock';
  return around.some(aboutMember) && !violation.invariant.endsWith('-at-rest')
    ? around
    : records.filter(aboutMember).slice(-lastRecordsAtRest);
}
