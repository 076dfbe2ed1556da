import { classifyLease, classifyMemberClaim, isClaimable } from '../claims/claim-liveness.js';
import type { MemberFacts } from '../desktop-backend.js';
import { leasePoolLabel, removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { compareNatural, nextMemberNames } from '../member-names.js';
import type { PoolRollout } from '../pool-rollout.js';
import type { PoolSchedule } from '../pool-schedule.js';
import {
  isUnclaimed,
  planScheduleScaling,
  planScheduleTargets,
  type ScheduleTargets,
} from '../schedules/plan-schedule.js';
import { splitWaiterLeases } from '../waitlist/plan-waitlist.js';
import { type CtRolloutPlan, planCtRollout } from './plan-ct-rollout.js';

/** One member of a container pool as a reconcile pass read it: its Pod's facts and which objects exist. @category ct-pools */
export interface CtMemberRead {
  member: string;
  /** The Pod's facts; `undefined` while it has no Pod. */
  pod: MemberFacts | undefined;
  service: boolean;
  homeClaim: boolean;
}

/** What {@link planCtReconcile} decides on. @category ct-pools */
export interface CtReconcileInput {
  pool: string;
  /** The members wanted. */
  size: number;
  /** Whether members have a home volume. */
  home: boolean;
  /** Every member object found (Pod, Service or home claim labelled with the pool). */
  members: readonly CtMemberRead[];
  /** The pool's Leases (label `corral.dev/vdi-pool`). */
  leases: readonly LeaseObject[];
  /** Names the namespace already uses (every Pod and Service): a new member takes none of them. */
  taken: ReadonlySet<string>;
  now: Date;
  /**
   * The pool's schedule, when it has one: the size follows its targets instead of `size` (which holds outside
   * every period), and only members free for the settle time are removed.
   */
  schedule?: CtScheduleRead | undefined;
  /** The pool's `minReady`: the Ready free members a roll-out keeps outside every period. */
  minReady?: number | undefined;
  /**
   * The roll-out to the spec's image under way, when some member runs another image or its journal names members:
   * free members on another image are replaced by {@link planCtRollout}, and only then.
   */
  rollout?: PoolRollout | undefined;
}

/** What a scheduled container pool's pass reads besides its members. @category ct-pools */
export interface CtScheduleRead {
  schedule: PoolSchedule;
  /** The free members kept running outside every period. */
  minReady: number;
  /** When each member's Pod was first seen free (`corral.dev/vdi-free-since`). */
  freeSince: ReadonlyMap<string, Date>;
}

/**
 * One step of a reconcile pass.
 *
 * - `create`: a new member: its home claim, Service and Pod.
 * - `complete`: an existing member lacks objects: create those named (the Pod only while nobody holds it).
 * - `replace`: a free member's Pod finished, or the roll-out replaces its older image: take its Lease, delete
 *   the Pod, create it again (the home volume stays).
 * - `remove`: the pool is too big: take a free member's Lease, delete its objects, drop the Lease.
 * - `skip`: a held member is left alone, or one whose Pod is still being deleted is left for the next pass.
 * - `drop-removal`: a removal's Lease (`corral-vdi/resize`) that a pass which died left on a member it is not
 *   removing or replacing now: delete it, so the member can be claimed again.
 * - `mark-free` / `unmark-free`: a scheduled pool's member seen free now (its Pod is marked free since now), or
 *   claimed again (the mark goes); a scale-down takes only members marked a settle time ago.
 *
 * @category ct-pools
 */
export type CtReconcileStep =
  | { kind: 'create'; member: string }
  | { kind: 'complete'; member: string; pod: boolean; service: boolean; homeClaim: boolean }
  | { kind: 'replace'; member: string; uid: string; reason: 'finished' | 'image' }
  | { kind: 'remove'; member: string }
  | { kind: 'skip'; member: string; reason: 'claimed' | 'deleting' }
  | { kind: 'drop-removal'; member: string }
  | { kind: 'mark-free'; member: string }
  | { kind: 'unmark-free'; member: string };

/** What a reconcile pass does, and how many new Pods it starts (what capacity admission must fit). @category ct-pools */
export interface CtReconcilePlan {
  steps: CtReconcileStep[];
  newPods: number;
  /** For a scheduled pool: its targets now, the demand they follow and the free members settling before removal. */
  schedule?: CtSchedulePlan;
  /**
   * With a roll-out: its pass, the journal to write before any step (`journal`), and the members it begins now
   * (`begun`: replacements and extra members).
   */
  rollout?: CtRolloutPlan & { journal: string[]; begun: string[] };
}

/** Where a scheduled container pool's pass aims. @category ct-pools */
export interface CtSchedulePlan {
  targets: ScheduleTargets;
  claimed: number;
  waiters: number;
  /** Free members past the target that are not free for the settle time yet. */
  settling: number;
}

function isFree(read: CtMemberRead, lease: LeaseObject | undefined, now: Date): boolean {
  // a removal's own Lease (perhaps left by one that died) does not hold a member
  if (lease?.spec.holderIdentity === removalHolder) return true;
  // a Pod on its way out holds nobody: only a live Lease does
  if (read.pod && !read.pod.deleting)
    return isClaimable(classifyMemberClaim({ member: read.pod, lease, now }));
  if (!lease) return true;
  const liveness = classifyLease(lease, now);
  return liveness.kind !== 'held';
}

/**
 * Plans one reconcile pass of a container pool: make missing members and objects, replace finished Pods of free
 * members, and shrink by removing free members, highest index first. A held member's Pod is never touched, so a
 * pool with held members shrinks as far as it can and the rest follows once they are released. Pure.
 *
 * @example
 * ```ts
 * const plan = planCtReconcile({ pool: 'devbox', size: 2, home: false, members, leases, taken, now });
 * for (const step of plan.steps) if (step.kind === 'create') await createMember(step.member);
 * ```
 * @category ct-pools
 */
export function planCtReconcile(input: CtReconcileInput): CtReconcilePlan {
  const { pool, home, leases, taken, now } = input;
  const leaseOf = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const members = [...input.members].sort((left, right) => compareNatural(left.member, right.member));
  const free = new Map(
    members.map((read) => [read.member, isFree(read, leaseOf.get(leaseNameFor(read.member)), now)]),
  );
  const scheduled = input.schedule && planScheduledSize(input, input.schedule, free);
  const size = scheduled?.size ?? input.size;
  // a removal deletes the Service with the Pod: a member whose Pod is going and whose Service is gone is leaving
  const standing = members.filter((read) => !(read.pod?.deleting && !read.service));
  const roll = input.rollout && planRollingImage(input, input.rollout, { free, size, scheduled, standing });
  // a member being replaced or starting as an extra is the roll-out's: no shrink takes it
  const rolling = new Set([...(roll?.journal ?? []), ...(roll?.replace ?? []), ...(roll?.remove ?? [])]);
  const surplus = Math.max(0, standing.length - size - (roll?.remove.length ?? 0));
  // while old members remain or new ones start, the extra members stay: a shrink could take a Ready one below the buffer
  const holdsExtras = roll !== undefined && (roll.keepsExtras || roll.journal.length > 0);
  const removed = new Set([
    ...(roll?.remove ?? []),
    ...(holdsExtras ? [] : standing)
      .filter(
        (read) =>
          free.get(read.member) &&
          !rolling.has(read.member) &&
          (scheduled?.removable.has(read.member) ?? true),
      )
      .reverse()
      .slice(0, surplus)
      .map((read) => read.member),
  ]);
  const replacing = new Set(roll?.replace);
  const steps: CtReconcileStep[] = [];
  let newPods = 0;
  for (const read of members) {
    const { member, pod } = read;
    if (removed.has(member)) {
      steps.push({ kind: 'remove', member });
      continue;
    }
    const isHeld = !free.get(member);
    if (pod?.deleting) {
      steps.push({ kind: 'skip', member, reason: 'deleting' });
      continue;
    }
    const missing = { pod: !pod && !isHeld, service: !read.service, homeClaim: home && !read.homeClaim };
    if (missing.pod || missing.service || missing.homeClaim) {
      steps.push({ kind: 'complete', member, ...missing });
      if (missing.pod) newPods += 1;
      continue;
    }
    if (isHeld) {
      steps.push({ kind: 'skip', member, reason: 'claimed' });
      continue;
    }
    if (pod && (pod.previousInstance || replacing.has(member))) {
      steps.push({
        kind: 'replace',
        member,
        uid: pod.uid,
        reason: pod.previousInstance ? 'finished' : 'image',
      });
      newPods += 1;
    }
  }
  const writing = new Set(
    steps.filter((step) => step.kind === 'replace' || step.kind === 'remove').map((step) => step.member),
  );
  for (const lease of leases) {
    const member = memberFromLeaseName(lease.metadata.name ?? '');
    if (member && lease.spec.holderIdentity === removalHolder && !writing.has(member)) {
      steps.push({ kind: 'drop-removal', member });
    }
  }
  for (const member of scheduled?.markFree ?? []) steps.push({ kind: 'mark-free', member });
  for (const member of scheduled?.unmarkFree ?? []) steps.push({ kind: 'unmark-free', member });
  const kept = standing.length - removed.size;
  const names = new Set([
    ...taken,
    ...members.map((read) => read.member),
    ...leaseMembers(leases),
    ...(roll?.recreate ?? []),
  ]);
  const wanted = Math.max(0, size - kept);
  const created = nextMemberNames(pool, names, wanted + (roll?.extra ?? 0));
  for (const member of [...(roll?.recreate ?? []), ...created]) {
    steps.push({ kind: 'create', member });
    newPods += 1;
  }
  const plan: CtReconcilePlan = { steps, newPods };
  if (roll) {
    const { extra: _, ...rest } = roll;
    const extras = created.slice(wanted);
    const started = roll.replace.filter((member) => !roll.journal.includes(member));
    const begun = [...started, ...extras];
    plan.rollout = { ...rest, extra: extras.length, journal: [...roll.journal, ...begun], begun };
  }
  if (!scheduled) return plan;
  const { targets, claimed, waiters, settling } = scheduled;
  return { ...plan, schedule: { targets, claimed, waiters, settling } };
}

/**
 * The roll-out's pass within a reconcile pass: its buffer is the schedule's free target now, else `minReady`, and its
 * cap the `max` of the period the size follows. `journal` is what stays in the journal after the pass settled and
 * dropped members.
 */
function planRollingImage(
  input: CtReconcileInput,
  rollout: PoolRollout,
  pass: {
    free: ReadonlyMap<string, boolean>;
    size: number;
    scheduled: ReturnType<typeof planScheduledSize> | undefined;
    standing: readonly CtMemberRead[];
  },
): CtRolloutPlan & { journal: string[] } {
  const targets = pass.scheduled?.targets;
  const period = targets && (targets.period ?? targets.warmingFor);
  const max = input.schedule?.schedule.periods.find((candidate) => candidate.name === period)?.max;
  const roll = planCtRollout({
    rollout,
    members: input.members,
    leases: input.leases,
    free: pass.free,
    buffer: targets?.freeRunning ?? input.minReady ?? 0,
    size: pass.size,
    standing: pass.standing.length,
    cap: max ?? Number.POSITIVE_INFINITY,
    now: input.now,
  });
  const gone = new Set([...roll.settled, ...roll.dropped]);
  return { ...roll, journal: rollout.rebuilding.filter((member) => !gone.has(member)) };
}

/**
 * A scheduled pool's size now, by the schedule's own planners (the VM pools' keeper's): its targets for the members
 * claimed and the live waiters, and which free members a scale-down may take (free for the settle time, never the
 * free members the target keeps). Every free member of a container pool runs, so its free running target is the
 * size's share beyond the claimed.
 */
function planScheduledSize(
  input: CtReconcileInput,
  read: CtScheduleRead,
  free: ReadonlyMap<string, boolean>,
) {
  const { members, leases, now } = input;
  const leaseOf = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  // claimed as the VM pools' keeper counts it: an expired claim still lies on its member until a claim or reset
  const claimed = members.filter((member) =>
    member.pod
      ? !member.pod.deleting && !isUnclaimed(member.pod, leaseOf.get(leaseNameFor(member.member)), now)
      : !free.get(member.member),
  ).length;
  const poolLeases = leases.filter((lease) => lease.metadata.labels?.[leasePoolLabel] === input.pool);
  const waiters = splitWaiterLeases(poolLeases, 'ct', now).live.length;
  const targets = planScheduleTargets({
    schedule: read.schedule,
    plain: { size: input.size, minReady: read.minReady },
    claimed,
    waiters,
    now,
  });
  const scaling = planScheduleScaling({
    targets,
    members: members.flatMap((member) => member.pod ?? []),
    leases,
    freeSince: read.freeSince,
    now,
  });
  return {
    targets,
    claimed,
    waiters,
    size: targets.size,
    removable: new Set(scaling.remove),
    settling: scaling.waiting,
    markFree: scaling.markFree,
    unmarkFree: scaling.unmarkFree,
  };
}

// a member mid-reset may have no object left, only its Lease: its name stays taken
function leaseMembers(leases: readonly LeaseObject[]): string[] {
  return leases.flatMap((lease) => memberFromLeaseName(lease.metadata.name ?? '') ?? []);
}

/** What {@link planCtPoolDelete} decides. @category ct-pools */
export type CtPoolDeletePlan =
  | { kind: 'delete'; members: string[]; forced: boolean }
  | { kind: 'reject'; code: 'POOL_IN_USE'; message: string; claimed: string[] };

/**
 * Plans a container pool's delete: while members are held it refuses with `POOL_IN_USE`, naming them, unless
 * `force` (an administrator's action). Pure.
 *
 * @example
 * ```ts
 * const plan = planCtPoolDelete({ pool: 'devbox', members, leases, force: false, now: clock.now() });
 * ```
 * @category ct-pools
 */
export function planCtPoolDelete(input: {
  pool: string;
  members: readonly CtMemberRead[];
  leases: readonly LeaseObject[];
  force: boolean;
  now: Date;
}): CtPoolDeletePlan {
  const { pool, leases, force, now } = input;
  const leaseOf = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const members = [...input.members].sort((left, right) => compareNatural(left.member, right.member));
  const names = members.map((read) => read.member);
  const claimed = members
    .filter((read) => !isFree(read, leaseOf.get(leaseNameFor(read.member)), now))
    .map((read) => read.member);
  if (claimed.length === 0 || force) return { kind: 'delete', members: names, forced: claimed.length > 0 };
  return {
    kind: 'reject',
    code: 'POOL_IN_USE',
    message: `Container pool "${pool}" has claimed members: ${claimed.join(', ')}. Release them first, or delete with force (an administrator's action, recorded in the audit log).`,
    claimed,
  };
}
