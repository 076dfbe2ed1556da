import type { DesktopKind, MemberFacts } from '../desktop-backend.js';
import type { VdiErrorCode } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { leasePoolLabel, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { memberNotFoundReason } from '../member-not-found.js';
import { canRelease } from './access.js';
import type { ClaimMarks } from './claim-liveness.js';
import { classifyPoolMember } from './classify-member.js';
import { isReleasing } from './releasing-mark.js';

/** What {@link planRelease} looks at. @category claims */
export interface PlanReleaseInput {
  kind: DesktopKind;
  namespace: string;
  /** The member's name. */
  member: string;
  /** The member as its backend reads it now; `undefined` when its object is gone. */
  facts: MemberFacts | undefined;
  /** The member's claim Lease as read now; `undefined` when there is none. */
  lease: LeaseObject | undefined;
  /** Who releases: the holder, an administrator, or the reclaim policy. */
  actor: string;
  asAdmin: boolean;
  /** Release only the claim with this session ID. */
  expectedSessionId?: string | undefined;
  /** The time to judge expiry at; pass `clock.now()`. */
  now: Date;
}

/**
 * What a release does, decided once from the member and its Lease as read:
 *
 * - `refuse`: nothing changes; `code` and `reason` say why (`CLAIM_ENDED`, `NOT_HOLDER`, `CLAIM_CHANGED` when
 *   the claim is not the expected session, `MEMBER_NOT_FOUND`).
 * - `reset`: when there is a Lease, first make the claim the release's own by marking it
 *   `corral.dev/vdi-releasing` with `lease`'s resourceVersion as precondition, unless `resume` says an earlier
 *   release of the same session already did; then reset the member by `how` (`stop` a persistent member;
 *   `recreate` an ephemeral one, or finish an `interrupted` recreate whose member object is gone or going); then
 *   delete the Lease (uid precondition); then clear the presentation copy of `holder` when `clearPresentation`
 *   (a recreated member carries none), best-effort.
 *
 * @category claims
 */
export type ReleasePlan =
  | {
      kind: 'refuse';
      code: Extract<
        VdiErrorCode,
        'CLAIM_ENDED' | 'NOT_HOLDER' | 'CLAIM_EXPIRED' | 'CLAIM_CHANGED' | 'MEMBER_NOT_FOUND'
      >;
      reason: string;
      details: Readonly<Record<string, unknown>>;
    }
  | {
      kind: 'reset';
      how: 'stop' | 'recreate';
      /** The member object is gone or being deleted while the Lease still holds it: a recreate stopped half way. */
      interrupted: boolean;
      /** The pool, from the member or, once it is gone, from its Lease; a recreate makes the member in it. */
      pool: string;
      /** Who held the desktop. */
      holder: string;
      /** An administrator releases another identity's desktop. */
      force: boolean;
      /** The Lease to mark and delete, as read; `undefined` when there is none (a v0.6.0 or orphaned claim). */
      lease: { name: string; uid: string; resourceVersion: string } | undefined;
      /** The Lease is already marked releasing by its own session: an earlier release stopped half way. */
      resume: boolean;
      clearPresentation: boolean;
    };

/**
 * Decides whether a release may go ahead and which steps it takes. Pure: the caller executes the plan; a reset that
 * fails with the member as found gives the claim back unmarked, and any other step that fails leaves the Lease
 * marked releasing under the same holder, and the next release resumes from it.
 *
 * @example
 * ```ts
 * const plan = planRelease({ kind: 'vm', namespace, member, facts, lease, actor: 'alice', asAdmin: false, now });
 * if (plan.kind === 'refuse') throw new VdiError(plan.code, plan.reason, { details: plan.details });
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `now` is not a valid date or the Lease is not the member's.
 * @category claims
 */
export function planRelease(input: PlanReleaseInput): ReleasePlan {
  const { kind, namespace, member, facts, lease, actor, asAdmin } = input;
  const desktopId = formatDesktopId({ kind, namespace, member });
  // a member whose object is gone or going while its Lease holds it was mid-recreate; the Lease alone decides
  const interrupted = lease !== undefined && (facts === undefined || facts.deleting);
  if (facts === undefined && lease === undefined) {
    return {
      kind: 'refuse',
      code: 'MEMBER_NOT_FOUND',
      reason: memberNotFoundReason(kind, namespace, member),
      details: { namespace, member },
    };
  }
  const marks = interrupted || facts === undefined ? leaseOnly(member) : facts;
  const state = classifyPoolMember({ member: marks, lease, identity: actor, now: input.now });
  const decision = canRelease({ state, identity: actor, isAdmin: asAdmin, desktopId });
  if (decision.kind === 'refused') {
    return { kind: 'refuse', code: decision.code, reason: decision.reason, details: decision.details };
  }
  if (
    input.expectedSessionId !== undefined &&
    lease?.metadata.annotations?.[sessionIdAnnotation] !== input.expectedSessionId
  ) {
    return {
      kind: 'refuse',
      code: 'CLAIM_CHANGED',
      reason: `Desktop ${desktopId} was claimed again since it was read; nothing was released.`,
      details: { desktopId },
    };
  }
  const holder = decision.holder ?? actor;
  const how = interrupted || facts?.ephemeral ? 'recreate' : 'stop';
  return {
    kind: 'reset',
    how,
    interrupted,
    pool: facts?.pool || lease?.metadata.labels?.[leasePoolLabel] || '',
    holder,
    force: holder !== actor,
    lease:
      lease === undefined
        ? undefined
        : {
            name: lease.metadata.name ?? '',
            uid: lease.metadata.uid ?? '',
            resourceVersion: lease.metadata.resourceVersion ?? '',
          },
    resume: isReleasing(lease),
    clearPresentation: how === 'stop',
  };
}

// with the member gone or going, nothing on it counts: only its Lease says who holds it
function leaseOnly(member: string): ClaimMarks {
  return {
    member,
    pool: '',
    deleting: false,
    power: 'unknown',
    presentation: { holder: undefined, label: undefined, claimedAt: undefined, sessionId: undefined },
  };
}
