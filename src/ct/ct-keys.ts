/** Label on a container pool's ConfigMap and its members' objects: the desktop kind, `ct`. @category ct-pools */
export const kindLabel = 'corral.dev/vdi-kind';
/** Label on a member's Pod, Service and PVC naming the member. @category ct-pools */
export const ctMemberLabel = 'corral.dev/vdi-member';
/** The ConfigMap key that holds a container pool's spec, as JSON. @category ct-pools */
export const specKey = 'spec.json';
/**
 * The ConfigMap key beside the spec that records a scheduled pool's failed reconcile passes in a row, so the next
 * passes back off; an apply of the spec drops it. @category ct-pools
 */
export const scheduleFailureKey = 'schedule-failure';
/**
 * The ConfigMap key beside the spec that records the pool's image roll-out (the image, paused, the journal of the
 * members being replaced), in the shape of a VM pool's `roll-out` setting; an apply keeps it. @category ct-pools
 */
export const rolloutKey = 'roll-out';
/** The name of the one container of a member's Pod. @category ct-pools */
export const desktopContainer = 'desktop';
/** Where a member's home volume is mounted. @category ct-pools */
export const homeMountPath = '/home';

/** The ConfigMap a container pool's spec lives in: `corral-vdi-ct-<pool>`. @category ct-pools */
export function specConfigMapName(pool: string): string {
  return `corral-vdi-ct-${pool}`;
}

/**
 * The stem of a member's home volume claims, `<member>-home-`: the apiserver adds a random suffix, so a wipe
 * makes a fresh claim without waiting for the old one to be deleted.
 *
 * @category ct-pools
 */
export function homeClaimPrefix(member: string): string {
  return `${member}-home-`;
}
