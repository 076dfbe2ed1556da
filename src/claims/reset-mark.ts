import { resetDueAnnotation, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';

/**
 * Whether the Lease's own claim took its member over from an expired claim and has not reset it yet: it carries
 * the `corral.dev/vdi-reset-due` mark of its current session.
 *
 * @category claims
 */
export function isResetDue(lease: LeaseObject | undefined): boolean {
  const annotations = lease?.metadata.annotations;
  const marked = annotations?.[resetDueAnnotation];
  return marked !== undefined && marked === (annotations?.[sessionIdAnnotation] ?? '');
}
