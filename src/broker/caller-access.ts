// Who the caller is, as the routes see it; what they may do is decided by src/access.ts.

/** A signed-in caller as the routes see it. */
export interface Caller {
  login: string;
  /** The groups the identity provider vouched for with the login. */
  groups: readonly string[];
  /** An admin acts on every user's desktops. */
  admin: boolean;
}

/**
 * Who counts as an admin: a login of the allowlist or a member of an admin group, or everyone when both are empty
 * (open mode).
 */
export function createAdminCheck(
  admins: readonly string[],
  adminGroups: readonly string[],
): (login: string, groups: readonly string[]) => boolean {
  const allowlist = new Set(admins);
  const groupAllowlist = new Set(adminGroups);
  return (login, groups) =>
    (allowlist.size === 0 && groupAllowlist.size === 0) ||
    allowlist.has(login) ||
    groups.some((group) => groupAllowlist.has(group));
}
