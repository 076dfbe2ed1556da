import { z } from 'zod';
import { canOpenConsole } from '../claims/access.js';
import { readDesktopAs } from '../claims/read-held-member.js';
import type { VdiContext } from '../context.js';
import { checkHolderEntitlement } from '../entitlements/pool-entitlement.js';
import { VdiError } from '../errors.js';
import type { ConsoleHandle, ConsoleKind, SessionEngine } from '../sessions/session-engine.js';
import { parseOptions } from '../validate.js';
import { parseDesktopId } from './input-rules.js';

/** Options of {@link Broker.authorizeConsole}. @category broker */
export interface AuthorizeConsoleOptions {
  /** `vm/<namespace>/<member>`. */
  desktopId: string;
  /** The caller's login, as {@link Broker.identify} found it. */
  identity: string;
  /** Which console the caller opens. */
  kind: ConsoleKind;
  /** The caller's groups, as {@link Broker.identify} found them; a member of an admin group is an admin. */
  groups?: string[];
}

const consoleSchema = z.object({
  desktopId: z.string(),
  identity: z.string(),
  kind: z.enum(['vnc', 'serial', 'terminal', 'rdp']),
  groups: z.array(z.string()).optional(),
});

/** What the console gate needs of its broker. */
export interface ConsoleGateOptions {
  ctx: VdiContext;
  sessions: SessionEngine;
  namespaces: readonly string[];
  isAdmin(login: string, groups: readonly string[]): boolean;
}

/**
 * Builds the gate of console websockets: the holder of a claimed desktop and the admins pass, and each passed
 * console is counted by the session engine until its handle closes.
 */
export function createConsoleGate(
  options: ConsoleGateOptions,
): (consoleOptions: AuthorizeConsoleOptions) => Promise<ConsoleHandle> {
  const { ctx, sessions, namespaces, isAdmin } = options;
  return async (consoleOptions) => {
    const { desktopId, identity, kind, groups } = parseOptions(
      consoleSchema,
      consoleOptions,
      'authorizeConsole',
    );
    if (identity.trim() === '')
      throw new VdiError(
        'UNAUTHENTICATED',
        'A console needs a signed-in user; pass the login of broker.identify().',
      );
    const id = parseDesktopId(desktopId, namespaces);
    if (id.kind === 'reject') throw new VdiError(id.code, id.message);
    const { desktopKind, namespace, member } = id;
    const admin = isAdmin(identity, groups ?? []);
    const { view, lease } = await readDesktopAs(ctx, {
      kind: desktopKind,
      namespace,
      member,
      identity,
      isAdmin: admin,
      decide: (request) => canOpenConsole({ ...request, doing: 'open a console of' }),
    });
    const asker = { identity, groups: groups ?? [], isAdmin: admin };
    await checkHolderEntitlement(ctx, { kind: desktopKind, namespace, pool: view.pool, ...asker, lease });
    return await sessions.openConsole({ member, namespace, identity, kind });
  };
}
