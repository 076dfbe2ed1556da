import { z } from 'zod';
import type { VdiContext } from '../context.js';
import type { DesktopKind } from '../desktop-backend.js';
import { parseOptions, validateNamespace } from '../validate.js';
import { type ClaimOptions, type ClaimResult, claimDesktop } from './claim-desktop.js';
import type { DesktopView } from './desktop-view.js';
import { getDesktop, type ListDesktopsOptions, listDesktops } from './list-desktops.js';
import { type MemberOptions, memberSchema } from './read-held-member.js';
import { type ReleaseResult, releaseMember } from './release-desktop.js';
import { renewDesktop } from './renew-desktop.js';
import { startDesktop } from './start-desktop.js';

export type { ClaimOptions, ClaimResult } from './claim-desktop.js';
export type { ListDesktopsOptions } from './list-desktops.js';
export type { MemberOptions } from './read-held-member.js';
export type { ReleaseResult } from './release-desktop.js';

/** Options of {@link ClaimsService.release}. @category claims */
export interface ReleaseOptions extends MemberOptions {
  /** Release only the claim with this session ID, the one the caller read; a newer claim is `CLAIM_CHANGED`. */
  expectedSessionId?: string;
}

const releaseSchema = memberSchema.extend({ expectedSessionId: z.string().min(1).max(253).optional() });

/** The claim primitives every front end uses. Create it with `createVdi`. @category claims */
export interface ClaimsService {
  /**
   * Claims a free member of a pool for `identity` and starts it. A retry returns the desktop the identity
   * already holds (same session). Members are tried in random order, so concurrent claimants rarely collide;
   * the pool is read from the apiserver's watch cache, and a claimant that loses a Lease race tries another member
   * it read as free before it reads the pool again. A member whose previous instance is still going down is not
   * handed out, and a member taken over from another identity's expired claim is reset before it is returned.
   *
   * Guarantees: no member ever has two holders (the Lease create is first-writer-wins, a stale Lease is
   * replaced with its resourceVersion). A failed VM update or start keeps the claim, so no second user gets a
   * half-configured desktop; a start failure is returned as `startError`.
   *
   * With `groups`, the pool's allowed groups and users are checked first (`asAdmin` passes every pool). With
   * `maxDesktopsPerUser`, or `groups` and a pool that sets its own limit, a claim that would take one more desktop
   * than the identity may hold in the namespace is refused; one that returns the desktop held in the pool is not.
   *
   * @throws {@link VdiError} `NOT_ENTITLED` (with `groups`, before anything is written), `USER_LIMIT_REACHED`
   *   (under a limit; before anything is written when the identity held the limit already; `details.held` names
   *   the desktops held), `NO_FREE_MEMBER`,
   *   `POOL_NOT_FOUND`, `INVALID_INPUT`, `STOP_FAILED` or
   *   `RECREATE_FAILED` when a takeover's reset fails (the claim stays; claim again to finish it).
   */
  claim(options: ClaimOptions): Promise<ClaimResult>;
  /**
   * Claims on behalf of a named user (an administrator's assign); the same rules as {@link ClaimsService.claim},
   * except that the lowest free member (in natural order) is taken.
   */
  assign(options: ClaimOptions & { actor?: string }): Promise<ClaimResult>;
  /**
   * Releases a desktop: marks its claim releasing, stops it (or recreates an ephemeral member), then ends the
   * claim. Only the holder, or an administrator (`asAdmin`, recorded as a force-release), may release. With
   * `expectedSessionId`, only that claim is released: a newer one is `CLAIM_CHANGED`, untouched.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_CHANGED`, `STOP_FAILED`, `RECREATE_FAILED`,
   *   `MEMBER_NOT_FOUND`.
   */
  release(options: ReleaseOptions): Promise<ReleaseResult>;
  /** The CLI's name for {@link ClaimsService.release}: the same call, the same rules. */
  unassign(options: MemberOptions): Promise<ReleaseResult>;
  /**
   * Starts the caller's desktop; a running desktop is left alone.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `START_FAILED`, `FORBIDDEN` naming the
   *   permission when the caller may not start members.
   */
  start(options: MemberOptions): Promise<DesktopView>;
  /**
   * Renews the caller's claim for another Lease duration.
   *
   * @throws {@link VdiError} `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`, `CLAIM_CHANGED`.
   */
  renew(options: MemberOptions): Promise<DesktopView>;
  /** One desktop. @throws {@link VdiError} `MEMBER_NOT_FOUND`, `INVALID_INPUT`. */
  getDesktop(options: { member: string; namespace?: string; kind?: DesktopKind }): Promise<DesktopView>;
  /**
   * The desktops someone holds (a live Lease, a v0.6.0 assignment, or a running member whose Lease is gone), of
   * `identity` when given; with `all`, every pool member. An expired claim is nobody's desktop, as for a claim.
   */
  listDesktops(options: ListDesktopsOptions): Promise<DesktopView[]>;
}

/** Builds the claims service on a context. */
export function createClaimsService(ctx: VdiContext): ClaimsService {
  async function releaseAs(options: ReleaseOptions, call: string): Promise<ReleaseResult> {
    const {
      member,
      identity,
      namespace: asked,
      asAdmin,
      expectedSessionId,
      kind,
    } = parseOptions(releaseSchema, options, call);
    return await releaseMember(ctx, {
      namespace: validateNamespace(asked ?? ctx.defaultNamespace),
      member,
      ...(kind === undefined ? {} : { kind }),
      actor: identity,
      asAdmin: asAdmin ?? false,
      ...(expectedSessionId === undefined ? {} : { expectedSessionId }),
    });
  }

  return {
    claim: (options) => claimDesktop(ctx, options, { actor: undefined, order: 'random' }),
    // an administrator hands out members in order, as people expect; self-service spreads claimants out
    assign: ({ actor, ...options }) =>
      claimDesktop(ctx, options, { actor, order: 'lowest', skipEntitlement: true }),
    release: (options) => releaseAs(options, 'release'),
    unassign: (options) => releaseAs(options, 'unassign'),
    start: (options) => startDesktop(ctx, options),
    renew: (options) => renewDesktop(ctx, options),
    getDesktop: (options) => getDesktop(ctx, options),
    listDesktops: (options) => listDesktops(ctx, options),
  };
}
