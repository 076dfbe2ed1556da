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
