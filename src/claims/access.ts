import { VdiError, type VdiErrorCode } from '../errors.js';
import type { MemberClassification } from './classify-member.js';

/**
 * Who asks to do something with one desktop. In open mode (a broker without an admin allowlist) every caller is
 * an administrator, so the front end passes `isAdmin: true` for everyone.
 *
 * @category access
 */
export interface AccessRequest {
  /** The member as {@link classifyMember} tells it to this caller. */
  state: MemberClassification;
  /** The caller's exact identity, the one `state` was classified for. */
  identity: string;
  /** Whether the caller is an administrator. */
  isAdmin: boolean;
  /** The desktop ID, for the refusal's reason. */
  desktopId: string;
}

/** An {@link AccessRequest} to use a console, with what the caller wants to do in words. @category access */
export interface ConsoleAccessRequest extends AccessRequest {
  /** Such as `connect to`, `open a console of`, `redirect USB devices to`. */
  doing: string;
}

/** A refusal: the error code a front end answers with, and a reason that says what to do next. @category access */
export interface AccessRefusal {
  kind: 'refused';
  code: Extract<VdiErrorCode, 'NOT_HOLDER' | 'CLAIM_ENDED' | 'CLAIM_EXPIRED'>;
  reason: string;
  details: Readonly<Record<string, unknown>>;
}

/**
 * What an access rule decides. `holder` is who holds the desktop (the caller, unless an administrator asked);
 * it is `undefined` only when an administrator inspects a desktop nobody holds.
 *
 * @category access
 */
export type AccessDecision = { kind: 'allowed'; holder: string | undefined } | AccessRefusal;

type Verdict = 'allowed' | AccessRefusal['code'];
type Action = 'inspect' | 'start' | 'release' | 'console';

function holderOf(state: MemberClassification): string | undefined {
  switch (state.kind) {
    case 'held-by-caller':
    case 'held-by-other':
    case 'orphan-adoptable':
    case 'orphan-held-by-other':
      return state.holder;
    case 'legacy-adoptable':
    case 'legacy-held-by-other':
      return state.user;
    case 'stale':
      return state.previousHolder;
    default:
      return undefined;
  }
}

// The one table: what the named holder, an administrator and anyone else get, per state and action.
function verdictOf(action: Action, request: AccessRequest): { verdict: Verdict; holder: string | undefined } {
  const { state, identity, isAdmin } = request;
  const holder = holderOf(state);
  const isHolder =
    state.kind === 'held-by-caller' ||
    state.kind === 'legacy-adoptable' ||
    state.kind === 'orphan-adoptable' ||
    (state.kind === 'stale' && holder !== undefined && holder === identity);
  const holderOrAdmin = (otherwise: Verdict): Verdict =>
    isHolder || isAdmin ? 'allowed' : holder === undefined ? otherwise : 'NOT_HOLDER';
  switch (state.kind) {
    case 'held-by-caller':
    case 'held-by-other':
      return { verdict: holderOrAdmin('NOT_HOLDER'), holder };
    case 'stale':
      if (state.reason === 'no-holder') {
        return { verdict: action === 'inspect' && isAdmin ? 'allowed' : 'CLAIM_ENDED', holder: undefined };
      }
      // an expired claim binds nobody: its holder may still look at it and give it back, nothing more
      if (action === 'inspect' || action === 'release')
        return { verdict: holderOrAdmin('NOT_HOLDER'), holder };
      return { verdict: 'CLAIM_EXPIRED', holder };
    case 'legacy-adoptable':
    case 'legacy-held-by-other':
    case 'orphan-adoptable':
    case 'orphan-held-by-other':
      // ownership is the Lease: its user may see and free it, but uses it only after claiming it again
      if (action === 'inspect' || action === 'release')
        return { verdict: holderOrAdmin('NOT_HOLDER'), holder };
      return { verdict: isAdmin ? 'allowed' : isHolder ? 'CLAIM_ENDED' : 'NOT_HOLDER', holder };
    case 'free':
    case 'unavailable':
      return { verdict: action === 'inspect' && isAdmin ? 'allowed' : 'CLAIM_ENDED', holder: undefined };
  }
}

function reasonFor(
  code: AccessRefusal['code'],
  action: Action,
  request: AccessRequest,
  doing: string,
): string {
  const { state, desktopId } = request;
  if (code === 'NOT_HOLDER') {
    return `${desktopId} is held by another user; only its holder or an admin can ${doing} it.`;
  }
  if (code === 'CLAIM_EXPIRED') {
    const expiredAt = state.kind === 'stale' ? state.expiredAt : undefined;
    const when = expiredAt ? ` at ${expiredAt.toISOString()}` : '';
    return `The claim on ${desktopId} expired${when}; claim the pool again.`;
  }
  switch (state.kind) {
    case 'legacy-adoptable':
      return `${desktopId} is assigned to you from before claims had Leases; claim its pool to take it over, then ${doing} it.`;
    case 'orphan-adoptable':
      return `${desktopId} shows you as its user but its claim Lease is gone; claim its pool to take it back, then ${doing} it.`;
    case 'unavailable':
      return `${desktopId} is being deleted; claim a desktop from its pool.`;
    default:
      return action === 'release'
        ? `Desktop ${desktopId} is not claimed; there is nothing to release.`
        : `${desktopId} is not claimed: its claim has ended. Claim the pool to get a desktop.`;
  }
}

function decide(action: Action, request: AccessRequest, doing: string): AccessDecision {
  const { verdict, holder } = verdictOf(action, request);
  if (verdict === 'allowed') return { kind: 'allowed', holder };
  const expiredAt = request.state.kind === 'stale' ? request.state.expiredAt : undefined;
  return {
    kind: 'refused',
    code: verdict,
    reason: reasonFor(verdict, action, request, doing),
    details: {
      desktopId: request.desktopId,
      ...(verdict === 'CLAIM_EXPIRED' && expiredAt ? { expiredAt: expiredAt.toISOString() } : {}),
    },
  };
}

/**
 * Whether the caller may read one desktop: its holder (also of an expired claim, a v0.6.0 assignment or a
 * member whose Lease is gone) and administrators may; a desktop nobody holds is `CLAIM_ENDED` for everyone
 * else.
 *
 * @example
 * ```ts
 * const decision = canInspect({ state, identity: 'alice', isAdmin: false, desktopId });
 * if (decision.kind === 'refused') throw refusalError(decision);
 * ```
 * @category access
 */
export function canInspect(request: AccessRequest): AccessDecision {
  return decide('inspect', request, 'use');
}

/**
 * Whether the caller may start a desktop: the holder of a live claim and administrators may. Administrators may
 * also start a v0.6.0 assignment or a member whose Lease is gone; its own user claims it again first. An
 * expired claim is `CLAIM_EXPIRED`, a desktop nobody holds `CLAIM_ENDED`, for everyone.
 *
 * @category access
 */
export function canStart(request: AccessRequest): AccessDecision {
  return decide('start', request, 'start');
}

/**
 * Whether the caller may release a desktop: the identity its claim names (live, expired, v0.6.0 or with the
 * Lease gone) and administrators may. A desktop nobody holds is `CLAIM_ENDED`: there is nothing to release.
 *
 * @category access
 */
export function canRelease(request: AccessRequest): AccessDecision {
  return decide('release', request, 'release');
}

/**
 * Whether the caller may use a desktop's consoles (connect, console websockets, USB redirection): the holder of
 * a live claim and administrators may, and administrators also on a v0.6.0 assignment or a member whose Lease is
 * gone. An expired claim is `CLAIM_EXPIRED` and a desktop nobody holds `CLAIM_ENDED`, for everyone.
 *
 * @example
 * ```ts
 * const decision = canOpenConsole({ state, identity, isAdmin, desktopId, doing: 'connect to' });
 * ```
 * @category access
 */
export function canOpenConsole(request: ConsoleAccessRequest): AccessDecision {
  return decide('console', request, request.doing);
}

/**
 * The error a front end throws for a refusal.
 *
 * @category access
 */
export function refusalError(
  refusal: AccessRefusal | Extract<PoolAccessDecision, { kind: 'refused' }>,
): VdiError {
  return new VdiError(refusal.code, refusal.reason, { details: refusal.details });
}

/** Who may claim from a pool: its allowed groups and users; both empty lets everyone. @category access */
export interface PoolEntitlement {
  /** The pool ID, `<kind>/<namespace>/<pool>`, for the refusal's reason. */
  poolId: string;
  /** Groups whose members may claim. */
  allowedGroups?: readonly string[] | undefined;
  /** Logins that may claim. */
  allowedUsers?: readonly string[] | undefined;
}

/** Who asks to claim from a pool. @category access */
export interface PoolAccessRequest {
  /** The caller's exact login. */
  identity: string;
  /** The caller's groups, as the identity provider vouched for them. */
  groups: readonly string[];
  /** Whether the caller is an administrator: administrators may use every pool. */
  isAdmin: boolean;
  pool: PoolEntitlement;
}

/** What {@link canUsePool} decides. @category access */
export type PoolAccessDecision =
  | { kind: 'allowed' }
  | {
      kind: 'refused';
      code: Extract<VdiErrorCode, 'NOT_ENTITLED'>;
      reason: string;
      details: Readonly<Record<string, unknown>>;
    };

/**
 * Whether a caller may claim from (wait for, open a console in) a pool: a pool with no allowed groups and no
 * allowed users lets everyone; otherwise an allowed login, a member of an allowed group, or an administrator. A
 * refusal is `NOT_ENTITLED`, naming the pool and what to ask for.
 *
 * @example
 * ```ts
 * const decision = canUsePool({ identity, groups, isAdmin, pool: { poolId: 'vm/corral-vms/gpu', allowedGroups: ['ml'] } });
 * ```
 * @category access
 */
export function canUsePool(request: PoolAccessRequest): PoolAccessDecision {
  const { identity, groups, isAdmin, pool } = request;
  const allowedGroups = pool.allowedGroups ?? [];
  const allowedUsers = pool.allowedUsers ?? [];
  if (allowedGroups.length === 0 && allowedUsers.length === 0) return { kind: 'allowed' };
  if (isAdmin || allowedUsers.includes(identity) || groups.some((group) => allowedGroups.includes(group))) {
    return { kind: 'allowed' };
  }
  const askFor =
    allowedGroups.length === 0
      ? 'to be added to its allowed users'
      : `to be added to one of its groups (${allowedGroups.join(', ')}) or to its allowed users`;
  return {
    kind: 'refused',
    code: 'NOT_ENTITLED',
    reason: `${identity} may not use pool ${pool.poolId}; ask an administrator ${askFor}.`,
    details: { pool: pool.poolId, allowedGroups: [...allowedGroups] },
  };
}
