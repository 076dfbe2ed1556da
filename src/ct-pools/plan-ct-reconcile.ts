import { classifyLease, classifyMemberClaim, isClaimable } from '../claims/claim-liveness.js';
import type { MemberFacts } from '../desktop-backend.js';
import { leasePoolLabel, removalHolder } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import { compareNatural, nextMemberNames } from '../member-names.js';
import type { PoolSchedule } from '../pool-schedule.js';
import {
  isUnclaimed,
  planScheduleScaling,
  planScheduleTargets,
  type ScheduleTargets,
} from '../schedules/plan-schedule.js';
import { splitWaiterLeases } from '../waitlist/plan-waitlist.js';

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
  /** The image the spec names now: a free member running another one is replaced. */
  image: string;
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
 * - `replace`: a free member's Pod finished, or runs an image the spec no longer names: take its Lease, delete
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
 * const plan = planCtReconcile({ pool: 'devbox', size: 2, image, home: false, members, leases, taken, now });
 * for (const step of plan.steps) if (step.kind === 'create') await createMember(step.member);
 * ```
 * @category ct-pools
 */
export function planCtReconcile(input: CtReconcileInput): CtReconcilePlan {
  const { pool, image, home, leases, taken, now } = input;
  const leaseOf = new Map(leases.map((lease) => [lease.metadata.name ?? '', lease]));
  const members = [...input.members].sort((left, right) => compareNatural(left.member, right.member));
  const free = new Map(
    members.map((read) => [read.member, isFree(read, leaseOf.get(leaseNameFor(read.member)), now)]),
  );
  const scheduled = input.schedule && planScheduledSize(input, input.schedule, free);
  const size = scheduled?.size ?? input.size;
  const surplus = Math.max(0, members.length - size);
  const removed = new Set(
    members
      .filter((read) => free.get(read.member) && (scheduled?.removable.has(read.member) ?? true))
      .reverse()
      .slice(0, surplus)
      .map((read) => read.member),
  );
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
    if (pod && (pod.previousInstance || pod.source !== image)) {
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
  const kept = members.length - removed.size;
  const names = new Set([...taken, ...members.map((read) => read.member), ...leaseMembers(leases)]);
  for (const member of nextMemberNames(pool, names, Math.max(0, size - kept))) {
    steps.push({ kind: 'create', member });
    newPods += 1;
  }
  if (!scheduled) return { steps, newPods };
  const { targets, claimed, waiters, settling } = scheduled;
  return { steps, newPods, schedule: { targets, claimed, waiters, settling } };
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
