import type { PoolEntitlement } from '../claims/access.js';
import { shownHolder } from '../claims/claim-liveness.js';
import type { DesktopKind, MemberFacts, MemberPower } from '../desktop-backend.js';
import { judgeHolderEntitlement } from '../entitlements/holder-entitlement.js';
import { formatPoolId } from '../ids.js';
import {
  connectedAtAnnotation,
  disconnectedAtAnnotation,
  notEntitledAtAnnotation,
  releasingAnnotation,
} from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor } from '../lease-name.js';
import { compareNatural } from '../member-names.js';
import type { RolloutStatus } from '../rollouts/describe-rollout.js';
import type { ScheduleStatus } from '../schedules/describe-schedule.js';
import { planSpares } from '../spares/plan-spares.js';

/**
 * Where a member's session stands, from the marks on its claim Lease: `none` without a claim, `claimed` before its
 * first console, `connected` while a console is open, `disconnected` after the last one closed, `releasing` while
 * a release is under way.
 *
 * @category spares
 */
export type SessionState = 'none' | 'claimed' | 'connected' | 'disconnected' | 'releasing';

/** One member in {@link PoolStatus}. @category spares */
export interface PoolStatusMember {
  name: string;
  /** `<kind>/<namespace>/<member>`. */
  id: string;
  /** Who holds it; `null` when it is free. */
  holder: string | null;
  /** The backend's word for its state, such as KubeVirt's `Running`. */
  phase: string;
  power: MemberPower;
  session: SessionState;
  /** Free and running or starting: a claim gets it without waiting for a start. */
  warm: boolean;
  /** Free, running and marked as a spare the keeper started (it stops it once the pool has too many). */
  spare: boolean;
  /**
   * Whether the pool's lists still let the holder in, judged from the groups the claim records: `not-entitled` is
   * reclaimed after the grace; `unchecked` is never judged (an assign, a claim without groups, a claim from before
   * claims recorded groups); `null` without a claim.
   */
  entitlement: 'entitled' | 'not-entitled' | 'unchecked' | null;
  /** When the session engine first saw the holder no longer let in (RFC 3339); its reclaim runs from here. */
  notEntitledAt: string | null;
}

/** A pool as `corral-vdi pool status` shows it. @category spares */
export interface PoolStatus {
  /** `<kind>/<namespace>/<pool>`. */
  id: string;
  kind: DesktopKind;
  name: string;
  namespace: string;
  /** The spares the pool keeps; `null` when it has no setting. */
  minReady: number | null;
  /** Free members running or starting now. */
  warm: number;
  /** Spares missing now: the keeper's next pass starts them, if the pool has stopped free members. */
  short: number;
  /** Identities waiting for a member of the pool (Leases labelled `corral.dev/vdi-waiter=<pool>`). */
  waiters: number;
  /** Where the pool's schedule stands, for a VM pool that has one; `null` otherwise. */
  schedule: ScheduleStatus | null;
  /** Where the pool's move to a new golden VM stands, for a VM pool that has had one; `null` otherwise. */
  rollOut: RolloutStatus | null;
  members: PoolStatusMember[];
}

/** What {@link describePoolStatus} reads. @category spares */
export interface PoolStatusInput {
  kind: DesktopKind;
  namespace: string;
  pool: string;
  members: readonly MemberFacts[];
  leases: readonly LeaseObject[];
  /** Members that carry the spare mark. */
  marked: ReadonlySet<string>;
  minReady: number | undefined;
  waiters: number;
  now: Date;
  /** Who the pool lets in now; without it every holder is `entitled`. */
  entitlement?: PoolEntitlement | undefined;
  /** The pool's schedule as it stands, when it has one. */
  schedule?: ScheduleStatus | undefined;
  /** The pool's roll-out as it stands, when it has had one. */
  rollOut?: RolloutStatus | undefined;
}

function sessionOf(lease: LeaseObject | undefined, held: boolean): SessionState {
  if (!held) return 'none';
  const annotations = lease?.metadata.annotations ?? {};
  if (annotations[releasingAnnotation]) return 'releasing';
  const connectedAt = annotations[connectedAtAnnotation];
  const disconnectedAt = annotations[disconnectedAtAnnotation];
  if (connectedAt && (!disconnectedAt || Date.parse(disconnectedAt) < Date.parse(connectedAt)))
    return 'connected';
  return disconnectedAt ? 'disconnected' : 'claimed';
}

/**
 * Describes a pool for an operator: each member's holder, phase, session, whether it is warm or a spare and
 * whether the pool still lets its holder in, and the pool's spares against its `minReady`. Pure.
 *
 * @example
 * ```ts
 * const status = describePoolStatus({ kind: 'vm', namespace, pool: 'devpool', members, leases, marked, minReady: 2, waiters: 0, now });
 * console.log(`${status.warm}/${status.minReady} warm`);
 * ```
 * @category spares
 */
export function describePoolStatus(input: PoolStatusInput): PoolStatus {
  const { kind, namespace, pool, marked, now } = input;
  const leaseOf = new Map(input.leases.map((lease) => [lease.metadata.name, lease]));
  const plan = planSpares({
    minReady: input.minReady ?? 0,
    members: input.members,
    leases: input.leases,
    marked,
    now,
  });
  const ready = new Set(plan.ready);
  const members = [...input.members]
    .sort((left, right) => compareNatural(left.member, right.member))
    .map((member): PoolStatusMember => {
      const lease = leaseOf.get(leaseNameFor(member.member));
      const holder = shownHolder({ member, lease, now }) ?? null;
      const warm = ready.has(member.member);
      const judged =
        holder === null || lease === undefined
          ? null
          : judgeHolderEntitlement(lease, input.entitlement ?? { poolId: member.desktopId });
      return {
        name: member.member,
        id: member.desktopId,
        holder,
        phase: member.phase,
        power: member.power,
        session: sessionOf(lease, holder !== null),
        warm,
        spare: warm && marked.has(member.member),
        entitlement: judged,
        notEntitledAt: (holder !== null && lease?.metadata.annotations?.[notEntitledAtAnnotation]) || null,
      };
    });
  return {
    id: formatPoolId({ kind, namespace, pool }),
    kind,
    name: pool,
    namespace,
    minReady: input.minReady ?? null,
    warm: ready.size,
    short: Math.max(0, (input.minReady ?? 0) - ready.size),
    waiters: input.waiters,
    schedule: input.schedule ?? null,
    rollOut: input.rollOut ?? null,
    members,
  };
}
