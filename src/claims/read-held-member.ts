import { z } from 'zod';
import { type AccessDecision, type AccessRequest, canStart, refusalError } from '../access.js';
import { backendFor, type VdiContext } from '../context.js';
import { type DesktopBackend, defaultDesktopKind, type MemberFacts } from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import type { LeaseObject } from '../kube-objects.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  validateNamespace,
} from '../validate.js';
import { classifyPoolMember } from './classify-member.js';
import { type DesktopView, describeDesktop } from './desktop-view.js';
import { leaseNameFor } from './lease-name.js';
import { memberNotFoundReason } from './member-not-found.js';
import { isReleasing } from './releasing-mark.js';

/** Options naming one member and the caller. @category claims */
export interface MemberOptions {
  /** The member VM's name, such as `devpool-1`. */
  member: string;
  /** The caller's exact identity. */
  identity: string;
  namespace?: string;
  /** Act as an administrator: on any holder's desktop (a release is then recorded as a force-release). */
  asAdmin?: boolean;
}

/** The options of a call on one member, checked; shared by release, start and renew. */
export const memberSchema = z.object({
  member: memberNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  asAdmin: z.boolean().optional(),
});

/** A member the caller may use, with its facts and Lease as just read. */
export interface HeldMember {
  identity: string;
  facts: MemberFacts;
  lease: LeaseObject | undefined;
  backend: DesktopBackend;
}

/**
 * Reads a member by name and checks, by {@link canStart}, that the caller may use it: a claim being released
 * is `CLAIM_ENDED`, so neither a start nor a renewal races the release.
 *
 * @throws {@link VdiError} `INVALID_INPUT`, `MEMBER_NOT_FOUND`, `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`.
 */
export async function readHeldMember(
  ctx: VdiContext,
  options: MemberOptions,
  call: string,
): Promise<HeldMember> {
  const { member, identity, namespace: asked, asAdmin } = parseOptions(memberSchema, options, call);
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const backend = backendFor(ctx, defaultDesktopKind);
  const { facts, lease } = await readMemberAs(ctx, backend, {
    namespace,
    member,
    identity,
    isAdmin: asAdmin ?? false,
    decide: canStart,
  });
  if (isReleasing(lease)) {
    throw new VdiError(
      'CLAIM_ENDED',
      `${facts.desktopId} is being released; release it again to finish, or claim its pool for a desktop.`,
      { details: { desktopId: facts.desktopId } },
    );
  }
  return { identity, facts, lease, backend };
}

/**
 * Reads one member's facts through its backend.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND` when there is no such member; `INVALID_INPUT` when it is in no pool.
 */
export async function readMemberFacts(
  backend: DesktopBackend,
  namespace: string,
  member: string,
): Promise<MemberFacts> {
  const facts = await backend.readMember({ namespace, member });
  if (facts) return facts;
  throw new VdiError('MEMBER_NOT_FOUND', memberNotFoundReason(backend.kind, namespace, member), {
    details: { namespace, member },
  });
}

/** Options of {@link readDesktopAs}. */
export interface ReadDesktopAsOptions {
  namespace: string;
  member: string;
  /** The caller's exact identity. */
  identity: string;
  /** Whether the caller is an administrator (everyone is, in an open broker). */
  isAdmin: boolean;
  /** The access rule of what the caller is about to do, such as {@link canInspect}. */
  decide(request: AccessRequest): AccessDecision;
}

/**
 * Reads one desktop and its Lease for a front end, and lets the caller through only when `decide` allows.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND`, `INVALID_INPUT`, and the refusal of `decide`.
 */
export async function readDesktopAs(
  ctx: VdiContext,
  options: ReadDesktopAsOptions,
): Promise<{ view: DesktopView; lease: LeaseObject | undefined }> {
  const { facts, lease } = await readMemberAs(ctx, backendFor(ctx, defaultDesktopKind), options);
  return { view: describeDesktop(facts, lease), lease };
}

/**
 * The one read-classify-decide sequence of a member a caller is about to use, through the member's backend.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND`, `INVALID_INPUT`, and the refusal of `decide`.
 */
export async function readMemberAs(
  ctx: VdiContext,
  backend: DesktopBackend,
  options: ReadDesktopAsOptions,
): Promise<{ facts: MemberFacts; lease: LeaseObject | undefined }> {
  const { namespace, member, identity, isAdmin, decide } = options;
  const [facts, lease] = await Promise.all([
    readMemberFacts(backend, namespace, member),
    ctx.cluster.getLease(namespace, leaseNameFor(member)),
  ]);
  const state = classifyPoolMember({ member: facts, lease, identity, now: ctx.clock.now() });
  const decision = decide({ state, identity, isAdmin, desktopId: facts.desktopId });
  if (decision.kind === 'refused') throw refusalError(decision);
  return { facts, lease };
}
