import { isReleasing } from '../claims/releasing-mark.js';
import { isResetDue } from '../claims/reset-mark.js';
import { defaultCloneTimeoutMs } from '../desktop-backend.js';
import { judgeHolderEntitlement, readHolderRecord } from '../entitlements/holder-entitlement.js';
import {
  leaseMemberLabel,
  leaseNamePrefix,
  leasePoolLabel,
  notEntitledAtAnnotation,
  reclaimNotifiedAnnotation,
  reclaimWarnedAnnotation,
  removalHolder,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { parseRfc3339 } from '../parse-time.js';
import type { PoolSettings } from '../pool-settings.js';
import { isValidVmName } from '../validate.js';
import { type ConsoleState, ownState, parseMark, sessionFactsOf } from './console-marks.js';
import {
  describeSession,
  hasBrokerConsole,
  planReclaim,
  planReclaimWarning,
  type ReclaimPolicy,
  type ReclaimReason,
  warnedMark,
} from './plan-reclaim.js';
import { planRenewal } from './plan-renewal.js';
/**
 * How old a `corral.dev/vdi-releasing` mark gets before the pass takes its release for dead and finishes it: ten
 * minutes. A live reset takes at most two clone timeouts (the old VM's deletion, then the clone: four minutes), so a
 * release still running is never raced; a mark older than that was left by a process that died mid-release.
 *
 * @category sessions
 */
export const releaseStalledAfterMs = 5 * defaultCloneTimeoutMs;

/**
 * What {@link planReclaimPass} looks at: one namespace's claim Leases as listed (with every replica's console
 * entries), this process's consoles, and the policy.
 *
 * @category sessions
 */
export interface ReclaimPassInput {
  leases: readonly LeaseObject[];
  /** This process's console state, by member; an entry of an earlier claim of the member is ignored. */
  consoles: ReadonlyMap<string, ConsoleState>;
  /** This process's replica ID: `consoles` supersedes its entries in the Leases. */
  replicaId: string;
  /**
   * The namespace's pool member names as listed now. A Lease whose name carries a hashed member name needs them to
   * be placed, and a claim is renewed, marked or left to its release only once they show its member exists.
   */
  members?: readonly string[] | undefined;
  /** Of `members`, those being deleted: a claim of one has lost its member as surely as one of a member gone. */
  deleting?: readonly string[] | undefined;
  now: Date;
  policy: ReclaimPolicy;
  /** See {@link planRenewal}. */
  renewIntervalMs?: number | undefined;
  processStartedAt: Date;
  /** The last input this process's broker consoles carried, by member; newer than the Lease's mark until written. */
  inputs?: ReadonlyMap<string, Date> | undefined;
  /** Each pool's own settings, by pool name: its reclaim action and idle timeout. */
  settings?: ReadonlyMap<string, PoolSettings> | undefined;
}

/**
 * What a pass does with one claim Lease:
 *
 * - `reclaim`: the policy takes the desktop back for `reason`, due at `dueAt`; with `notify` (the pool's action)
 *   it reports that instead and keeps the claim. A reclaim the Lease says was reported
 *   (`corral.dev/vdi-reclaim-notified` naming the same reason and instant) is not due again.
 * - `entitlement`: mark the claim `corral.dev/vdi-not-entitled-at` (`notEntitledAt`) the first time its pool no
 *   longer lets its holder in, or clear that mark (`undefined`) once it does again; the claim is reclaimed for
 *   `not-entitled` the policy's `disconnectGraceMs` after the mark.
 * - `warn`: warn the holder that the desktop is reclaimed at `reclaimAt` for `reason`, and mark the Lease
 *   (`corral.dev/vdi-reclaim-warned`) so each reason and instant is warned about once.
 * - `renew`: renew the Lease; `marks` says whether session marks an earlier write missed go with it.
 * - `mark`: write the session marks an earlier write missed.
 * - `resume`: a release of it stopped half way (`corral.dev/vdi-releasing`): its member is gone or being deleted
 *   (a recreate failed), or its mark is older than {@link releaseStalledAfterMs} (its process died); resume that
 *   release, which resets the member (making it again when gone) and then ends the claim.
 * - `finish-reset`: a claim that took the member over from an expired one (`corral.dev/vdi-reset-due`) and whose
 *   recreate failed half way, leaving the member gone: make the member again and clear the mark, so the claim
 *   stays its holder's and the pool gets its member back even when the holder does not come back for it.
 * - `keep`: a live claim with nothing due.
 * - `skip`: not a live claim of a member (`not-a-claim`: no member's Lease, or one a pool removal holds;
 *   `unresolved`: its member name is hashed and the members were not given; `expired`: it binds nobody;
 *   `releasing`: a release of it is under way (`corral.dev/vdi-releasing`, marked less than
 *   {@link releaseStalledAfterMs} ago) and the policy does not reclaim it, which would resume that release;
 *   `member-gone`: its member is gone or being deleted and neither a release nor a takeover reset of it is under
 *   way, so it is neither renewed nor marked and lapses; `no-start`: it carries no readable start).
 *
 * @category sessions
 */
export type SessionStep =
  | {
      kind: 'reclaim';
      member: string;
      lease: LeaseObject;
      reason: ReclaimReason;
      dueAt: Date;
      notify: boolean;
    }
  | { kind: 'entitlement'; member: string; lease: LeaseObject; notEntitledAt: Date | undefined }
  | { kind: 'warn'; member: string; lease: LeaseObject; reason: ReclaimReason; reclaimAt: Date }
  | { kind: 'renew'; member: string; lease: LeaseObject; marks: boolean }
  | { kind: 'mark'; member: string; lease: LeaseObject }
  | { kind: 'resume'; member: string; lease: LeaseObject }
  | { kind: 'finish-reset'; member: string; lease: LeaseObject }
  | { kind: 'keep'; member: string; lease: LeaseObject }
  | {
      kind: 'skip';
      lease: LeaseObject;
      reason: 'not-a-claim' | 'unresolved' | 'expired' | 'releasing' | 'member-gone' | 'no-start';
    };

/**
 * The plan of one pass over a namespace: a step per Lease, how many live claims it looked at, and whether the
 * members must be listed (plan again with `members` and `deleting`): a Lease name carries a hashed member name, or
 * a step would renew, mark or wait on a release of a claim whose member may be gone.
 *
 * @category sessions
 */
export interface ReclaimPassPlan {
  steps: SessionStep[];
  desktops: number;
  needsMembers: boolean;
  /**
   * The pools' own settings must be read (plan again with `settings`): a reclaim is due (the action decides what it
   * does), a desktop has a broker console open (the pool's idle timeout applies), or a claim records its holder's
   * groups or is marked not entitled (the pool's allowed groups and users judge it).
   */
  needsSettings: boolean;
}

/**
 * The policy for one claim: the pass's, with its pool's own idle timeout when the pool sets one.
 *
 * @category sessions
 */
export function policyFor(
  lease: LeaseObject,
  policy: ReclaimPolicy,
  settings: ReadonlyMap<string, PoolSettings> | undefined,
): ReclaimPolicy {
  const own = settingsFor(lease, settings)?.idleTimeoutMs;
  return own === undefined ? policy : { ...policy, idleTimeoutMs: own };
}

function settingsFor(
  lease: LeaseObject,
  settings: ReadonlyMap<string, PoolSettings> | undefined,
): PoolSettings | undefined {
  const pool = lease.metadata.labels?.[leasePoolLabel];
  return pool === undefined ? undefined : settings?.get(pool);
}

/** The `corral.dev/vdi-reclaim-notified` value of a reported reclaim. @category sessions */
export function notifiedMark(reason: ReclaimReason, dueAt: Date): string {
  return `${reason} ${dueAt.toISOString()}`;
}

// the mark renewed the Lease and nothing renews a releasing claim, so renewTime is when its release began
function isStalled(lease: LeaseObject, now: Date): boolean {
  const text = lease.spec.renewTime;
  const markedAt = text === undefined ? undefined : parseRfc3339(text);
  return markedAt !== undefined && now.getTime() - markedAt.getTime() >= releaseStalledAfterMs;
}

type Placement = { member: string } | { skip: 'not-a-claim' | 'unresolved' };

function place(lease: LeaseObject, byLeaseName: ReadonlyMap<string, string> | undefined): Placement {
  const name = lease.metadata.name ?? '';
  // a shrink or pool delete holds a member's Lease while it removes it: no user's claim
  if (!name.startsWith(leaseNamePrefix) || lease.spec.holderIdentity === removalHolder) {
    return { skip: 'not-a-claim' };
  }
  const named = lease.metadata.labels?.[leaseMemberLabel] ?? memberFromLeaseName(name);
  if (named === undefined && byLeaseName === undefined) return { skip: 'unresolved' };
  const member = named ?? byLeaseName?.get(name);
  return member !== undefined && isValidVmName(member) && leaseNameFor(member) === name
    ? { member }
    : { skip: 'not-a-claim' };
}

function listedOf(input: Pick<ReclaimPassInput, 'members' | 'deleting'>): ListedMembers | undefined {
  const { members } = input;
  if (members === undefined) return undefined;
  const deleting = new Set(input.deleting);
  return {
    byLeaseName: new Map(members.map((member) => [leaseNameFor(member), member])),
    standing: new Set(members.filter((member) => !deleting.has(member))),
    deleting,
  };
}

// a step that would keep a claim alive, or wait on its release or its takeover's reset, first needs its member seen
function needsMembers(step: SessionStep): boolean {
  if (step.kind === 'skip') return step.reason === 'unresolved' || step.reason === 'releasing';
  if (isResetDue(step.lease)) return true;
  return step.kind === 'renew' || step.kind === 'mark' || step.kind === 'entitlement';
}

// a reclaim's action, and a connected desktop's idle timeout, may be the pool's own
function needsSettings(step: SessionStep, input: ReclaimPassInput): boolean {
  if (step.kind === 'reclaim' || step.kind === 'warn') return true;
  if (step.kind === 'skip') return false;
  if (isJudged(step.lease)) return true;
  const facts = sessionFactsOf(
    step.lease,
    input.consoles.get(step.member),
    input,
    input.inputs?.get(step.member),
  );
  return facts !== undefined && hasBrokerConsole(facts);
}

// a claim that records its holder's groups, or carries the mark, is judged against its pool's lists
function isJudged(lease: LeaseObject): boolean {
  return (
    readHolderRecord(lease).kind === 'groups' ||
    lease.metadata.annotations?.[notEntitledAtAnnotation] !== undefined
  );
}

/**
 * Whether a claim's pool still lets its holder in (`undefined` until the pools' settings are read), when it was
 * first seen not to, and when its reclaim for that is due: the grace after the mark.
 */
interface EntitlementFacts {
  verdict: ReturnType<typeof judgeHolderEntitlement> | undefined;
  markedAt: Date | undefined;
  dueAt: Date | undefined;
}

/**
 * When the reclaim of a claim marked `corral.dev/vdi-not-entitled-at` is due: the policy's `disconnectGraceMs` after
 * the mark; `undefined` for a claim not marked.
 *
 * @category sessions
 */
export function notEntitledReclaimAt(lease: LeaseObject, policy: ReclaimPolicy): Date | undefined {
  const markedAt = parseMark(lease, notEntitledAtAnnotation);
  return markedAt === undefined ? undefined : new Date(markedAt.getTime() + policy.disconnectGraceMs);
}

function entitlementOf(
  lease: LeaseObject,
  settings: ReadonlyMap<string, PoolSettings> | undefined,
  policy: ReclaimPolicy,
): EntitlementFacts {
  const markedAt = parseMark(lease, notEntitledAtAnnotation);
  if (settings === undefined) return { verdict: undefined, markedAt, dueAt: undefined };
  const own = settingsFor(lease, settings);
  const verdict = judgeHolderEntitlement(lease, {
    poolId: lease.metadata.labels?.[leasePoolLabel] ?? '',
    allowedGroups: own?.allowedGroups,
    allowedUsers: own?.allowedUsers,
  });
  const dueAt = verdict === 'not-entitled' ? notEntitledReclaimAt(lease, policy) : undefined;
  return { verdict, markedAt, dueAt };
}

/** The members as listed: their Lease names, and which of them exist and are not being deleted. */
interface ListedMembers {
  byLeaseName: ReadonlyMap<string, string>;
  standing: ReadonlySet<string>;
  deleting: ReadonlySet<string>;
}

function stepFor(
  lease: LeaseObject,
  input: Omit<ReclaimPassInput, 'leases' | 'members' | 'deleting'>,
  listed: ListedMembers | undefined,
): SessionStep {
  const placed = place(lease, listed?.byLeaseName);
  if ('skip' in placed) return { kind: 'skip', lease, reason: placed.skip };
  const { member } = placed;
  const renewal = planRenewal(lease, input.now, input.renewIntervalMs);
  if (renewal.kind === 'expired') return { kind: 'skip', lease, reason: 'expired' };
  const consoles = input.consoles.get(member);
  const facts = sessionFactsOf(lease, consoles, input, input.inputs?.get(member));
  if (facts === undefined) return { kind: 'skip', lease, reason: 'no-start' };
  const policy = policyFor(lease, input.policy, input.settings);
  const reclaim = planReclaim(facts, input.now, policy);
  const entitlement = entitlementOf(lease, input.settings, policy);
  const due: { reason: ReclaimReason; dueAt: Date } | undefined =
    reclaim.kind === 'reclaim'
      ? { reason: reclaim.reason, dueAt: describeSession(facts, policy).reclaimAt ?? input.now }
      : entitlement.dueAt !== undefined && entitlement.dueAt.getTime() <= input.now.getTime()
        ? { reason: 'not-entitled', dueAt: entitlement.dueAt }
        : undefined;
  if (due) {
    const notify = settingsFor(lease, input.settings)?.reclaimAction === 'notify';
    const reported =
      lease.metadata.annotations?.[reclaimNotifiedAnnotation] === notifiedMark(due.reason, due.dueAt);
    // a reported reclaim of a notify pool leaves the claim to its holder: it is renewed and marked as ever
    if (!(notify && reported)) return { kind: 'reclaim', member, lease, ...due, notify };
  }
  // a claim without its member is never kept alive: only a release or a takeover's reset makes the member again
  if (listed && !listed.standing.has(member)) {
    if (isReleasing(lease)) return { kind: 'resume', member, lease };
    // a member being deleted is left to its deletion; one that is gone is made again
    if (isResetDue(lease) && !listed.deleting.has(member)) return { kind: 'finish-reset', member, lease };
    return { kind: 'skip', lease, reason: 'member-gone' };
  }
  // a release under way owns the claim; a reclaim that is due resumes it, and so does one that stalled
  if (isReleasing(lease)) {
    return isStalled(lease, input.now)
      ? { kind: 'resume', member, lease }
      : { kind: 'skip', lease, reason: 'releasing' };
  }
  // the mark is written once and kept, so a crash before the reclaim loses no grace and restarts none
  if (entitlement.verdict !== undefined) {
    const notEntitled = entitlement.verdict === 'not-entitled';
    if (notEntitled !== (entitlement.markedAt !== undefined)) {
      return { kind: 'entitlement', member, lease, notEntitledAt: notEntitled ? input.now : undefined };
    }
  }
  const warning = planReclaimWarning(facts, input.now, policy);
  if (
    warning.kind === 'warn' &&
    lease.metadata.annotations?.[reclaimWarnedAnnotation] !== warnedMark(warning)
  ) {
    return { kind: 'warn', member, lease, reason: warning.reason, reclaimAt: warning.at };
  }
  const own = ownState(lease, consoles);
  const marks = own !== undefined && own.written < own.version;
  if (renewal.kind === 'renew') return { kind: 'renew', member, lease, marks };
  return marks ? { kind: 'mark', member, lease } : { kind: 'keep', member, lease };
}

/**
 * Plans one claim Lease's step, as {@link planReclaimPass} does for each.
 *
 * @throws {@link VdiError} `INVALID_INPUT` as {@link planReclaim} and {@link planRenewal}.
 * @category sessions
 */
export function planSessionStep(lease: LeaseObject, input: Omit<ReclaimPassInput, 'leases'>): SessionStep {
  return stepFor(lease, input, listedOf(input));
}

/**
 * Plans one pass of the session engine over a namespace: for each claim Lease, whether the policy reclaims its
 * desktop (and why), whether its Lease is due for renewal, whether session marks an earlier write missed must be
 * written, whether a release that stopped half way (its member gone, or its mark older than
 * {@link releaseStalledAfterMs}) must be resumed, or whether to leave it. A reclaimed desktop is neither renewed nor
 * marked, and neither is a claim whose member is gone or being deleted. Without `members` the
 * plan says `needsMembers` when a Lease name carries a hashed member name, or when a step would renew, mark or wait
 * on a release; without `settings` it says `needsSettings` when a reclaim is due or a desktop has a broker console
 * open. A pass with nothing due and no desktop connected through the broker needs only the Leases.
 *
 * @example
 * ```ts
 * let plan = planReclaimPass({ leases, consoles, now: clock.now(), policy, processStartedAt });
 * if (plan.needsMembers) plan = planReclaimPass({ leases, consoles, members, deleting, now, policy, processStartedAt });
 * for (const step of plan.steps) if (step.kind === 'reclaim') await reclaim(step.member, step.reason);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` as {@link planReclaim} and {@link planRenewal}.
 * @category sessions
 */
export function planReclaimPass(input: ReclaimPassInput): ReclaimPassPlan {
  const listed = listedOf(input);
  const steps = input.leases.map((lease) => stepFor(lease, input, listed));
  return {
    steps,
    desktops: steps.filter((step) => step.kind !== 'skip').length,
    needsMembers: listed === undefined && steps.some(needsMembers),
    needsSettings: input.settings === undefined && steps.some((step) => needsSettings(step, input)),
  };
}
