import type { MemberClassification } from '../claims/classify-member.js';
import { VdiError } from '../errors.js';

/** Options of {@link checkDesktopAccess}. @category connect */
export interface DesktopAccessOptions {
  /** The desktop ID for messages, such as `vm/corral-vms/devpool-1`. */
  desktopId: string;
  /** Whether the caller is an admin, who may use any claimed desktop. */
  asAdmin: boolean;
  /** What the caller wants to do, for messages: `connect to`, `redirect USB devices to`. */
  action: string;
}

/** Who holds a desktop the caller may use. @category connect */
export interface DesktopAccess {
  /** The identity that holds the desktop (the caller, unless an admin asked). */
  holder: string;
}

/**
 * Whether the caller may use a claimed desktop: its holder may, and so may an admin, as long as the claim is
 * alive. A v0.6.0 assignment or a VM whose Lease is gone counts as held by the user it names, but only an
 * admin may use it before that user claims it again, since ownership is the Lease.
 *
 * @example
 * ```ts
 * const state = classifyMember({ vm, lease, identity: 'alice', now: clock.now() });
 * const { holder } = checkDesktopAccess(state, { desktopId, asAdmin: false, action: 'connect to' });
 * ```
 * @throws {@link VdiError} `CLAIM_ENDED` when nobody holds the desktop (a claim of the pool gives one);
 *   `CLAIM_EXPIRED` when its Lease ran out (claim the pool again); `NOT_HOLDER` when someone else holds it and
 *   the caller is not an admin.
 * @category connect
 */
export function checkDesktopAccess(
  state: MemberClassification,
  options: DesktopAccessOptions,
): DesktopAccess {
  const { desktopId, asAdmin, action } = options;
  const notHolder = () =>
    new VdiError(
      'NOT_HOLDER',
      `${desktopId} is held by another user; only its holder or an admin can ${action} it.`,
      {
        details: { desktop: desktopId },
      },
    );
  switch (state.kind) {
    case 'held-by-caller':
      return { holder: state.holder };
    case 'held-by-other':
      if (asAdmin) return { holder: state.holder };
      throw notHolder();
    case 'legacy-held-by-other':
    case 'legacy-adoptable':
      if (asAdmin) return { holder: state.user };
      if (state.kind === 'legacy-held-by-other') throw notHolder();
      throw new VdiError(
        'CLAIM_ENDED',
        `${desktopId} is assigned to you from before claims had Leases; claim its pool to take it over, then ${action} it.`,
        { details: { desktop: desktopId } },
      );
    case 'orphan-held-by-other':
    case 'orphan-adoptable':
      if (asAdmin) return { holder: state.holder };
      if (state.kind === 'orphan-held-by-other') throw notHolder();
      throw new VdiError(
        'CLAIM_ENDED',
        `${desktopId} shows you as its user but its claim Lease is gone; claim its pool to take it back, then ${action} it.`,
        { details: { desktop: desktopId } },
      );
    case 'stale':
      if (state.reason === 'expired') {
        const when = state.expiredAt ? ` at ${state.expiredAt.toISOString()}` : '';
        throw new VdiError(
          'CLAIM_EXPIRED',
          `The claim on ${desktopId} expired${when}; claim the pool again.`,
          {
            details: {
              desktop: desktopId,
              ...(state.expiredAt ? { expiredAt: state.expiredAt.toISOString() } : {}),
            },
          },
        );
      }
      throw claimEnded(desktopId);
    case 'free':
      throw claimEnded(desktopId);
    case 'unavailable':
      throw new VdiError('CLAIM_ENDED', `${desktopId} is being deleted; claim a desktop from its pool.`, {
        details: { desktop: desktopId },
      });
  }
}

function claimEnded(desktopId: string): VdiError {
  return new VdiError(
    'CLAIM_ENDED',
    `${desktopId} is not claimed: its claim has ended. Claim the pool to get a desktop.`,
    {
      details: { desktop: desktopId },
    },
  );
}
