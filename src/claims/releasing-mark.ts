import type { MemberFacts } from '../desktop-backend.js';
import { releasingAnnotation, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';

/**
 * Whether a release of the Lease's own claim is under way: it carries the `corral.dev/vdi-releasing` mark of its
 * current session. Such a claim is neither renewed nor handed out again; only a release finishes it.
 *
 * @category claims
 */
export function isReleasing(lease: LeaseObject | undefined): boolean {
  const annotations = lease?.metadata.annotations;
  const marked = annotations?.[releasingAnnotation];
  return marked !== undefined && marked === (annotations?.[sessionIdAnnotation] ?? '');
}

/**
 * Whether a claim whose release is under way still leaves its holder the desktop: the member still presents the
 * claim's session and records no release of it, so a persistent member's stop has not been accepted yet and an
 * ephemeral member has not been deleted yet. The holder may start such a desktop (conditional on the member as
 * read) and open its consoles; the release's record or the member's delete changes the member, so a start read
 * before it is refused.
 *
 * @category claims
 */
export function leavesDesktopDuringRelease(facts: MemberFacts | undefined, lease: LeaseObject): boolean {
  const session = lease.metadata.annotations?.[sessionIdAnnotation];
  return (
    facts !== undefined &&
    !facts.deleting &&
    session !== undefined &&
    facts.presentation.sessionId === session &&
    facts.presentation.releasedSession !== session
  );
}
