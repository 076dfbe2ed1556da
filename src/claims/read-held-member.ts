import { z } from 'zod';
import { backendFor, type VdiContext } from '../context.js';
import {
  type DesktopBackend,
  type DesktopKind,
  defaultDesktopKind,
  type MemberFacts,
} from '../desktop-backend.js';
import { VdiError } from '../errors.js';
import { formatDesktopId } from '../ids.js';
import type { LeaseObject } from '../kube-objects.js';
import { memberNotFoundReason } from '../member-not-found.js';
import {
  identitySchema,
  memberNameSchema,
  namespaceSchema,
  parseOptions,
  validateNamespace,
} from '../validate.js';
import { type AccessDecision, type AccessRequest, canStart, refusalError } from './access.js';
import { classifyPoolMember } from './classify-member.js';
import { type DesktopMarks, type DesktopView, describeDesktop, describeResetting } from './desktop-view.js';
import { readMemberClaim } from './read-member-claim.js';
import { isReleasing, leavesDesktopDuringRelease } from './releasing-mark.js';

/** Options naming one member and the caller. @category claims */
export interface MemberOptions {
  /** The member VM's name, such as `devpool-1`. */
  member: string;
  /** The caller's exact identity. */
  identity: string;
  namespace?: string;
  /** Act as an administrator: on any holder's desktop (a release is then recorded as a force-release). */
  asAdmin?: boolean;
  /** The member's kind. @defaultValue `'vm'` */
  kind?: DesktopKind;
}

/** The options of a call on one member, checked; shared by release, start and renew. */
export const memberSchema = z.object({
  member: memberNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  asAdmin: z.boolean().optional(),
  kind: z.enum(['vm', 'ct']).optional(),
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
 * is `CLAIM_ENDED`, so a renewal never races the release; with `duringRelease` (a start) only once the release
 * has stopped or deleted the member ({@link leavesDesktopDuringRelease}).
 *
 * @throws {@link VdiError} `INVALID_INPUT`, `MEMBER_NOT_FOUND`, `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`.
 */
export async function readHeldMember(
  ctx: VdiContext,
  options: MemberOptions,
  call: string,
  { duringRelease = false }: { duringRelease?: boolean } = {},
): Promise<HeldMember> {
  const { member, identity, namespace: asked, asAdmin, kind } = parseOptions(memberSchema, options, call);
  const namespace = validateNamespace(asked ?? ctx.defaultNamespace);
  const backend = backendFor(ctx, kind ?? defaultDesktopKind);
  const { facts, lease } = await readMemberAs(ctx, backend, {
    namespace,
    member,
    identity,
    isAdmin: asAdmin ?? false,
    decide: canStart,
  });
  const desktopId = formatDesktopId({ kind: backend.kind, namespace, member });
  if (lease && isReleasing(lease) && !(duringRelease && leavesDesktopDuringRelease(facts, lease))) {
    throw releasedMeanwhile(desktopId);
  }
  if (facts === undefined || facts.deleting) {
    throw new VdiError(
      'MEMBER_NOT_FOUND',
      `${desktopId} is resetting: its member is gone or being deleted under the claim; release it to make the member again.`,
      { details: { desktopId } },
    );
  }
  return { identity, facts, lease, backend };
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
  /** The member's kind. @defaultValue `'vm'` */
  kind?: DesktopKind;
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
  const { marks, lease } = await readMemberAs(
    ctx,
    backendFor(ctx, options.kind ?? defaultDesktopKind),
    options,
  );
  return { view: describeDesktop(marks, lease), lease };
}

/** A member as a front end shows it: its facts (none while it is gone), what the view reads, and its Lease. */
export interface ReadMarks {
  facts: MemberFacts | undefined;
  /** The facts, or the `describeResetting` marks while a claim holds a member that is gone or going. */
  marks: DesktopMarks;
  lease: LeaseObject | undefined;
}

/**
 * Reads one member and its Lease; a member gone or being deleted under a claim reads as resetting.
 *
 * @throws {@link VdiError} `MEMBER_NOT_FOUND` when there is no such member and no claim of it.
 */
export async function readDesktopMarks(
  ctx: VdiContext,
  backend: DesktopBackend,
  namespace: string,
  member: string,
): Promise<ReadMarks> {
  const { facts, lease } = await readMemberClaim(ctx, backend, { namespace, member });
  const marks = describeResetting({ kind: backend.kind, namespace, member, facts, lease }) ?? facts;
  if (marks) return { facts, marks, lease };
  throw new VdiError('MEMBER_NOT_FOUND', memberNotFoundReason(backend.kind, namespace, member), {
    details: { namespace, member },
  });
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
): Promise<ReadMarks> {
  const { namespace, member, identity, isAdmin, decide } = options;
  const read = await readDesktopMarks(ctx, backend, namespace, member);
  const state = classifyPoolMember({ member: read.marks, lease: read.lease, identity, now: ctx.clock.now() });
  const desktopId = formatDesktopId({ kind: backend.kind, namespace, member });
  const decision = decide({ state, identity, isAdmin, desktopId });
  if (decision.kind === 'refused') throw refusalError(decision);
  return read;
}

/** The refusal of a call on a claim whose release has stopped, or is making again, its member. */
export function releasedMeanwhile(desktopId: string): VdiError {
  return new VdiError(
    'CLAIM_ENDED',
    `${desktopId} is being released and its member has been stopped, or is being made again: the claim ends as the release finishes. Should the release fail, the desktop stays yours; start it again then.`,
    { details: { desktopId } },
  );
}
