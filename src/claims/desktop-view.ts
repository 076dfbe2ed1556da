import type { MemberFacts } from '../desktop-backend.js';
import { formatTime, normalizeTime } from '../format-time.js';
import type { DesktopKind } from '../ids.js';
import { formatDesktopId, formatPoolId } from '../ids.js';
import { ephemeralLabel, leasePoolLabel, removalHolder, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { VirtualMachine } from '../kubevirt-types.js';
import {
  type ClaimMarks,
  claimHolder,
  classifyLeaselessMember,
  isTakeUnderWay,
  leaseExpiresAt,
  readClaimMarks,
} from './claim-liveness.js';

/**
 * One desktop as every front end shows it: which pool member it is, who holds it, and its power state.
 *
 * @category claims
 */
export interface DesktopView {
  /** `<kind>/<namespace>/<member>`; stays the same across claims. */
  id: string;
  kind: DesktopKind;
  namespace: string;
  member: string;
  pool: string;
  /** `<kind>/<namespace>/<pool>`. */
  poolId: string;
  /**
   * The exact identity the claim names: its Lease's holder (also once it expired; see `expiresAt`), a v0.6.0
   * user, or the user a running member without a Lease still shows; `undefined` when nothing names one.
   */
  owner: string | undefined;
  /** Changes with every claim; `undefined` when nobody holds it or for a v0.6.0 assignment. */
  sessionId: string | undefined;
  /** When it was claimed, RFC 3339 in UTC with milliseconds like every time the SDK reports. */
  claimedAt: string | undefined;
  /** When the claim's Lease expires unless renewed. */
  expiresAt: string | undefined;
  /** A v0.6.0 assignment that has no Lease yet. */
  legacy: boolean;
  /**
   * The backend's word for the state: KubeVirt's `printableStatus` (`Running`, `Stopped`) for a VM; for a
   * container the Pod's phase, its container's waiting reason, `NotReady` or `Terminating`. `Resetting` while the
   * member is gone or being deleted under its claim (see the claims guide).
   */
  phase: string;
  running: boolean;
  ephemeral: boolean;
}

/** What {@link describeDesktop} reads of a member: the parts of a backend's {@link MemberFacts} a view shows. @category claims */
export type DesktopMarks = ClaimMarks & Pick<MemberFacts, 'kind' | 'namespace' | 'phase' | 'ephemeral'>;

/**
 * Builds the view of a member from its backend's facts and (when claimed) its Lease. A Lease whose take is still
 * under way ({@link isTakeUnderWay}) is not a claim yet: the view shows no owner and no session.
 *
 * @category claims
 */
export function describeDesktop(facts: DesktopMarks, givenLease: LeaseObject | undefined): DesktopView {
  const { kind, namespace, member, pool, phase } = facts;
  const lease = givenLease && isTakeUnderWay(facts, givenLease) ? undefined : givenLease;
  const leaseless = lease === undefined ? classifyLeaselessMember(facts) : undefined;
  const expiresAt = lease && leaseExpiresAt(lease);
  const owner = lease ? lease.spec.holderIdentity : leaseless && claimHolder(leaseless);
  return {
    id: formatDesktopId({ kind, namespace, member }),
    kind,
    namespace,
    member,
    pool,
    poolId: formatPoolId({ kind, namespace, pool }),
    owner: owner || undefined,
    sessionId: lease?.metadata.annotations?.[sessionIdAnnotation],
    claimedAt: normalizeTime(lease?.spec.acquireTime ?? facts.presentation.claimedAt),
    expiresAt: expiresAt && formatTime(expiresAt),
    legacy: leaseless?.kind === 'legacy',
    phase,
    running: phase === 'Running',
    ephemeral: facts.ephemeral,
  };
}

/** The phase a desktop reads while its member is being made again under its claim. @category claims */
export const resettingPhase = 'Resetting';

/** What `describeResetting` looks at. @category claims */
export interface ResettingInput {
  kind: MemberFacts['kind'];
  namespace: string;
  member: string;
  /** The member as its backend reads it now; `undefined` when its object is gone. */
  facts: MemberFacts | undefined;
  /** The member's claim Lease as read now; `undefined` when there is none. */
  lease: LeaseObject | undefined;
}

/**
 * The marks a front end shows for a member whose claim outlives its object: the member is gone or being deleted
 * while a Lease still holds it, because a reset (a recreate) is under way or stopped half way. Only the Lease
 * counts then, and the desktop reads phase `Resetting` until a release makes the member again.
 *
 * @returns `undefined` when the member stands, or when no claim holds it (a pool removal's Lease is none).
 * @example
 * ```ts
 * const marks = describeResetting({ kind: 'vm', namespace, member, facts: undefined, lease }) ?? facts;
 * ```
 * @category claims
 */
export function describeResetting(input: ResettingInput): DesktopMarks | undefined {
  const { kind, namespace, member, facts, lease } = input;
  if (facts !== undefined && !facts.deleting) return undefined;
  const holder = lease?.spec.holderIdentity;
  if (!holder || holder === removalHolder) return undefined;
  return {
    kind,
    namespace,
    member,
    pool: facts?.pool || lease?.metadata.labels?.[leasePoolLabel] || '',
    deleting: false,
    power: 'provisioning',
    presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
    phase: resettingPhase,
    // only a recreate leaves a claimed member gone
    ephemeral: facts?.ephemeral ?? true,
  };
}

/**
 * Builds the view of a member from its VM and (when claimed) its Lease: {@link describeDesktop} of the VM's
 * marks, for readers that hold the VM itself.
 *
 * @category claims
 */
export function toDesktopView(vm: VirtualMachine, lease: LeaseObject | undefined): DesktopView {
  return describeDesktop(
    {
      ...readClaimMarks(vm),
      kind: 'vm',
      namespace: vm.metadata.namespace ?? '',
      phase: vm.status?.printableStatus ?? 'Unknown',
      ephemeral: vm.metadata.labels?.[ephemeralLabel] === 'true',
    },
    lease,
  );
}
