import { z } from 'zod';
import { backendFor, type VdiContext } from '../context.js';
import { type DesktopBackend, type DesktopKind, defaultDesktopKind } from '../desktop-backend.js';
import { leaseMemberLabel, leasePoolLabel } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';
import { leaseNameFor, memberFromLeaseName } from '../lease-name.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { shownHolder } from './claim-liveness.js';
import { type DesktopView, describeDesktop, describeResetting } from './desktop-view.js';
import { readDesktopMarks } from './read-held-member.js';
import { claimedKindOf } from './read-member-claim.js';

/** Options of {@link ClaimsService.listDesktops}. @category claims */
export interface ListDesktopsOptions {
  /** Only this identity's desktops. */
  identity?: string;
  /** Every desktop, claimed or not (an administrator's view). */
  all?: boolean;
  /** Namespaces to read; default the SDK's namespace. */
  namespaces?: string[];
  /** Only this pool's members. */
  pool?: string;
}

const listSchema = z.object({
  identity: identitySchema.optional(),
  all: z.boolean().optional(),
  namespaces: z.array(namespaceSchema).optional(),
  pool: poolNameSchema.optional(),
});

const getSchema = z.object({
  member: memberNameSchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
});

/**
 * The desktops someone holds (a live Lease, a v0.6.0 assignment, or a running member whose Lease is gone), of
 * `identity` when given; with `all`, every pool member, of every kind served. A claim whose member is gone or being
 * deleted is listed as its holder's desktop in phase `Resetting`. A namespace whose watch caches this process
 * started (`vdi.startCaches`, as `broker serve` does) is read from them.
 *
 * @throws {@link VdiError} `INVALID_INPUT`.
 */
export async function listDesktops(ctx: VdiContext, options: ListDesktopsOptions): Promise<DesktopView[]> {
  const { identity, all, namespaces: asked, pool } = parseOptions(listSchema, options, 'listDesktops');
  const namespaces = (asked ?? [ctx.defaultNamespace]).map(validateNamespace);
  const backends = Object.values(ctx.backends).filter((backend): backend is DesktopBackend => !!backend);
  const views: DesktopView[] = [];
  for (const namespace of namespaces) {
    // a broker's caches answer it: read afresh, each Desktops page read every namespace it serves from etcd in turn
    const how = { cached: ctx.cluster.isCaching(namespace) };
    const [leases, memberLists] = await Promise.all([
      ctx.cluster.listLeases(
        namespace,
        pool === undefined ? leasePoolLabel : `${leasePoolLabel}=${pool}`,
        how,
      ),
      Promise.all(backends.map((backend) => backend.listMembers(namespace, pool, how))),
    ]);
    const leaseByName = new Map(leases.map((lease) => [lease.metadata.name, lease]));
    const members = memberLists.flat();
    const listed = new Set(members.map((member) => leaseNameFor(member.member)));
    // a claim whose member is gone is still its holder's desktop, resetting
    const gone = leases.flatMap((lease) => {
      const member = memberOfLease(lease);
      if (member === undefined || listed.has(lease.metadata.name ?? '')) return [];
      const marks = describeResetting({
        kind: claimedKindOf(lease) ?? defaultDesktopKind,
        namespace,
        member,
        facts: undefined,
        lease,
      });
      return marks ? [{ marks, lease }] : [];
    });
    const now = ctx.clock.now();
    for (const { marks, lease } of [
      ...members.map((facts) => {
        const lease = leaseByName.get(leaseNameFor(facts.member));
        const { kind, member } = facts;
        return { marks: describeResetting({ kind, namespace, member, facts, lease }) ?? facts, lease };
      }),
      ...gone,
    ]) {
      const holder = shownHolder({ member: marks, lease, now });
      if (all || (holder !== undefined && (identity === undefined || holder === identity))) {
        views.push(describeDesktop(marks, lease));
      }
    }
  }
  return views;
}

function memberOfLease(lease: LeaseObject): string | undefined {
  const name = lease.metadata.name ?? '';
  const member = lease.metadata.labels?.[leaseMemberLabel] ?? memberFromLeaseName(name);
  return member !== undefined && leaseNameFor(member) === name ? member : undefined;
}

/**
 * One desktop; a member gone or being deleted under its claim reads as `Resetting`.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND` when there is neither the member nor a claim of it, `INVALID_INPUT`.
 */
export async function getDesktop(
  ctx: VdiContext,
  options: { member: string; namespace?: string; kind?: DesktopKind },
): Promise<DesktopView> {
  const { member, namespace: asked, kind } = parseOptions(getSchema, options, 'getDesktop');
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const { marks, lease } = await readDesktopMarks(
    ctx,
    backendFor(ctx, kind ?? defaultDesktopKind),
    namespace,
    member,
  );
  return describeDesktop(marks, lease);
}
