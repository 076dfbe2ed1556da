import { type DesktopView, toDesktopView } from '../claims/desktop-view.js';
import { leaseNameFor } from '../claims/lease-name.js';
import type { VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { leasePoolLabel, poolLabel } from '../keys.js';
import type { LeaseObject } from '../kubevirt-types.js';
import type { DesktopSession, SessionEngine } from '../sessions/session-engine.js';
import type { DesktopBody } from './schemas.js';

/** A pool member as read from the cluster: its view and its Lease, if claimed. */
export interface ReadDesktop {
  view: DesktopView;
  lease: LeaseObject | undefined;
}

/** Reads desktops of the served namespaces and describes them with their sessions, as the API answers them. */
export interface DesktopReader {
  /** @throws `VdiError` `MEMBER_NOT_FOUND` when the VM is not a pool member. */
  read(namespace: string, member: string): Promise<ReadDesktop>;
  describe(view: DesktopView, lease: LeaseObject | undefined): DesktopBody;
  /** Every claim Lease of the served namespaces, by `<namespace>/<name>`. */
  leasesByName(): Promise<Map<string, LeaseObject>>;
}

const nullable = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

function desktopBody(view: DesktopView, session: DesktopSession): DesktopBody {
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
  };
}

/** Builds the {@link DesktopReader} of a broker. */
export function createDesktopReader(
  ctx: VdiContext,
  sessions: SessionEngine,
  namespaces: readonly string[],
): DesktopReader {
  return {
    async read(namespace, member) {
      const [vm, lease] = await Promise.all([
        ctx.cluster.getVm(namespace, member),
        ctx.cluster.getLease(namespace, leaseNameFor(member)),
      ]);
      if (!vm?.metadata.labels?.[poolLabel]) {
        throw new VdiError(
          'MEMBER_NOT_FOUND',
          `There is no desktop vm/${namespace}/${member}; list your desktops or the pools.`,
          { details: { namespace, member } },
        );
      }
      return { view: toDesktopView(vm, lease), lease };
    },
    describe: (view, lease) =>
      desktopBody(view, sessions.describe({ namespace: view.namespace, member: view.member, lease })),
    async leasesByName() {
      const lists = await Promise.all(
        namespaces.map((namespace) => ctx.cluster.listLeases(namespace, leasePoolLabel)),
      );
      return new Map(
        lists.flat().map((lease) => [`${lease.metadata.namespace}/${lease.metadata.name}`, lease]),
      );
    },
  };
}
