// Who the caller is, as the routes see it; what they may do is decided by src/access.ts.

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
