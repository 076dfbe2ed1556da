import { z } from 'zod';
import { backendFor, type VdiContext } from '../context.js';
import { type DesktopBackend, type DesktopKind, defaultDesktopKind } from '../desktop-backend.js';
import { leasePoolLabel } from '../keys.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { claimHolder, classifyMemberClaim } from './claim-liveness.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { leaseNameFor } from './lease-name.js';
import { readMemberFacts } from './read-held-member.js';

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
 * `identity` when given; with `all`, every pool member, of every kind served.
 *
 * @throws {@link VdiError} `INVALID_INPUT`.
 */
export async function listDesktops(ctx: VdiContext, options: ListDesktopsOptions): Promise<DesktopView[]> {
  const { identity, all, namespaces: asked, pool } = parseOptions(listSchema, options, 'listDesktops');
  const namespaces = (asked ?? [ctx.defaultNamespace]).map(validateNamespace);
  const backends = Object.values(ctx.backends).filter((backend): backend is DesktopBackend => !!backend);
  const views: DesktopView[] = [];
  for (const namespace of namespaces) {
    const [leases, memberLists] = await Promise.all([
      ctx.cluster.listLeases(namespace, pool === undefined ? leasePoolLabel : `${leasePoolLabel}=${pool}`),
      Promise.all(backends.map((backend) => backend.listMembers(namespace, pool))),
    ]);
    const leaseByName = new Map(leases.map((lease) => [lease.metadata.name, lease]));
    const now = ctx.clock.now();
    for (const member of memberLists.flat()) {
      const lease = leaseByName.get(leaseNameFor(member.member));
      const holder = claimHolder(classifyMemberClaim({ member, lease, now }));
      if (all || (holder !== undefined && (identity === undefined || holder === identity))) {
        views.push(describeDesktop(member, lease));
      }
    }
  }
  return views;
}

/**
 * One desktop.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND`, `INVALID_INPUT`.
 */
export async function getDesktop(
  ctx: VdiContext,
  options: { member: string; namespace?: string; kind?: DesktopKind },
): Promise<DesktopView> {
  const { member, namespace: asked, kind } = parseOptions(getSchema, options, 'getDesktop');
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const [facts, lease] = await Promise.all([
    readMemberFacts(backendFor(ctx, kind ?? defaultDesktopKind), namespace, member),
    ctx.cluster.getLease(namespace, leaseNameFor(member)),
  ]);
  return describeDesktop(facts, lease);
}
