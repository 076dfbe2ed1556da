import type { DesktopKind } from '../ids.js';
import { leaseKindLabel, sessionIdAnnotation } from '../keys.js';
import type { LeaseObject } from '../kube-objects.js';

/**
 * The desktop kind a claim Lease records in its `corral.dev/vdi-kind` label; `undefined` for a Lease written
 * before claims recorded it (or with a value no backend serves), whose kind its member must tell.
 *
 * @category sessions
 */
export function claimKindOf(lease: LeaseObject): DesktopKind | undefined {
  const recorded = lease.metadata.labels?.[leaseKindLabel];
  return recorded === 'vm' || recorded === 'ct' ? recorded : undefined;
}

/**
 * What tells one claim of a member from the next: a Lease replaced or re-created for a new holder or session
 * differs in at least one field.
 *
 * @category sessions
 */
export interface ClaimKey {
  uid: string;
  holder: string;
  sessionId: string;
  acquireTime: string;
}

/**
 * The claim a Lease records.
 *
 * @category sessions
 */
export function claimKeyOf(lease: LeaseObject): ClaimKey {
  return {
    uid: lease.metadata.uid ?? '',
    holder: lease.spec.holderIdentity ?? '',
    sessionId: lease.metadata.annotations?.[sessionIdAnnotation] ?? '',
    acquireTime: lease.spec.acquireTime ?? '',
  };
}

/** Whether two keys name the same claim. @category sessions */
export function isSameClaim(a: ClaimKey, b: ClaimKey): boolean {
  return (
    a.uid === b.uid && a.holder === b.holder && a.sessionId === b.sessionId && a.acquireTime === b.acquireTime
  );
}
