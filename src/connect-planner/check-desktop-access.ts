import { canOpenConsole, refusalError } from '../claims/access.js';
import type { MemberClassification } from '../claims/classify-member.js';

/** Options of {@link checkDesktopAccess}. @category connect */
export interface DesktopAccessOptions {
  /** The desktop ID for messages, such as `vm/corral-vms/devpool-1`. */
  desktopId: string;
  /** Whether the caller is an admin, who may use any claimed desktop. */
  asAdmin: boolean;
  /** What the caller wants to do, for messages: `connect to`, `redirect USB devices to`. */
  action: string;
}

/** Who holds a desktop the caller may use. @category connect */
export interface DesktopAccess {
  /** The identity that holds the desktop (the caller, unless an admin asked). */
  holder: string;
}

/**
 * {@link canOpenConsole}, throwing its refusal: the gate of connect, USB redirection and console websockets.
 *
 * @example
 * ```ts
 * const state = classifyPoolMember({ member: facts, lease, identity: 'alice', now: clock.now() });
 * const { holder } = checkDesktopAccess(state, { desktopId, asAdmin: false, action: 'connect to' });
 * ```
 * @throws {@link VdiError} `CLAIM_ENDED` when nobody holds the desktop (a claim of the pool gives one);
 *   `CLAIM_EXPIRED` when its Lease ran out (claim the pool again); `NOT_HOLDER` when someone else holds it and
 *   the caller is not an admin.
 * @category connect
 */
export function checkDesktopAccess(
  state: MemberClassification,
  options: DesktopAccessOptions,
): DesktopAccess {
  const { desktopId, asAdmin, action } = options;
  // who an expired claim named never matters for a console, so no identity is needed
  const decision = canOpenConsole({ state, identity: '', isAdmin: asAdmin, desktopId, doing: action });
  if (decision.kind === 'refused') throw refusalError(decision);
  return { holder: decision.holder ?? '' };
}
