import { canInspect } from '../claims/access.js';
import type { DesktopView } from '../claims/desktop-view.js';
import { readDesktopAs } from '../claims/read-held-member.js';
import type { VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import { leasePoolLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import type { DesktopSession, SessionEngine } from '../sessions/session-engine.js';
import type { Caller } from './caller-access.js';
import type { DesktopBody } from './schemas.js';

/** A pool member as read from the cluster: its view and its Lease, if claimed. */
export interface ReadDesktop {
  view: DesktopView;
  lease: LeaseObject | undefined;
}

/** Reads desktops of the served namespaces and describes them with their sessions, as the API answers them. */
export interface DesktopReader {
  /**
   * Reads a desktop the caller may look at: its holder's, or any for an admin.
   *
   * @throws `VdiError` `MEMBER_NOT_FOUND` when it is not a pool member of `kind` (also when it is one of another
   *   kind); `CLAIM_ENDED`, `NOT_HOLDER` by `canInspect`.
   */
  read(kind: DesktopKind, namespace: string, member: string, caller: Caller): Promise<ReadDesktop>;
  describe(view: DesktopView, lease: LeaseObject | undefined): DesktopBody;
  /** Every claim Lease of the served namespaces, by `<namespace>/<name>`; from the watch caches when they run. */
  leasesByName(): Promise<Map<string, LeaseObject>>;
}

const nullable = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

function desktopBody(view: DesktopView, session: DesktopSession, now: Date): DesktopBody {
  return {
    id: view.id,
    kind: view.kind,
    namespace: view.namespace,
    member: view.member,
    pool: view.pool,
    poolId: view.poolId,
    owner: nullable(view.owner),
    sessionId: nullable(view.sessionId),
    claimedAt: nullable(view.claimedAt),
    expiresAt: nullable(view.expiresAt),
    legacy: view.legacy,
    phase: view.phase,
    running: view.running,
    ephemeral: view.ephemeral,
    connected: session.connected,
    disconnectedAt: nullable(session.disconnectedAt),
    reclaimAt: nullable(session.reclaimAt),
    reclaimReason: nullable(session.reclaimReason),
    ...(session.idleWarning ? { idleWarning: true } : {}),
    ...(session.reclaimWarning && session.reclaimAt !== undefined
      ? { reclaimWarning: true, reclaimInMs: Date.parse(session.reclaimAt) - now.getTime() }
      : {}),
  };
}

/** Builds the {@link DesktopReader} of a broker. */
export function createDesktopReader(
  ctx: VdiContext,
  sessions: SessionEngine,
  namespaces: readonly string[],
): DesktopReader {
  return {
    async read(kind, namespace, member, caller) {
      try {
        return await readDesktopAs(ctx, {
          kind,
          namespace,
          member,
          identity: caller.login,
          isAdmin: caller.admin,
          decide: canInspect,
        });
      } catch (error) {
        // the API speaks of desktops, not of the objects behind them; a name that is another thing says what
        if (!isVdiError(error, 'MEMBER_NOT_FOUND') || 'memberOf' in error.details) throw error;
        throw new VdiError(
          'MEMBER_NOT_FOUND',
          `There is no desktop ${formatDesktopId({ kind, namespace, member })}; list your desktops or the pools.`,
          { details: { namespace, member } },
        );
      }
    },
    describe: (view, lease) =>
      desktopBody(
        view,
        sessions.describe({ namespace: view.namespace, member: view.member, lease }),
        ctx.clock.now(),
      ),
    async leasesByName() {
      const lists = await Promise.all(
        namespaces.map((namespace) =>
          ctx.cluster.listLeases(namespace, leasePoolLabel, { cached: ctx.cluster.isCaching(namespace) }),
        ),
      );
      return new Map(
        lists.flat().map((lease) => [`${lease.metadata.namespace}/${lease.metadata.name}`, lease]),
      );
    },
  };
}
