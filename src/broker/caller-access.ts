import type { DesktopView } from '../claims/desktop-view.js';
import { VdiError } from '../errors.js';

// The broker's one home of the holder-or-admin rule, until it takes it from src/access.ts.

/** A signed-in caller as the routes see it. */
export interface Caller {
  login: string;
  /** An admin acts on every user's desktops. */
  admin: boolean;
}

/** Who counts as an admin: the allowlist, or everyone when it is empty (open mode). */
export function createAdminCheck(admins: readonly string[]): (login: string) => boolean {
  const allowlist = new Set(admins);
  return (login) => allowlist.size === 0 || allowlist.has(login);
}

/**
 * Lets the desktop's holder or an admin through; a desktop nobody holds is an ended claim for everyone but admins.
 *
 * @throws `VdiError` `CLAIM_ENDED` (nobody holds it), `NOT_HOLDER` (someone else does).
 */
export function requireHolderOrAdmin(view: DesktopView, caller: Caller): void {
  if (view.owner === caller.login || caller.admin) return;
  if (view.owner === undefined) {
    throw new VdiError(
      'CLAIM_ENDED',
      `Desktop ${view.id} is not claimed; claim its pool ${view.poolId} to get a desktop.`,
    );
  }
  throw new VdiError(
    'NOT_HOLDER',
    `Desktop ${view.id} is held by another user; only its holder or an admin may use it.`,
  );
}
