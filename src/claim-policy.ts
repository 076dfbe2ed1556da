// The plain data the claim path and the features answering its questions (`ClaimPolicy` in context.ts) share.
import type { DesktopKind, MemberFacts } from './desktop-backend.js';
import type { LeaseObject } from './kube-objects.js';

/** What `ClaimPolicy.heldForWaiters` looks at: the pool as one claim plans over it. @category access */
export interface ClaimQueueInput {
  kind: DesktopKind;
  members: readonly MemberFacts[];
  /** The pool's Leases as read, claims and waiters alike. */
  leases: readonly LeaseObject[];
  identity: string;
  now: Date;
}

/** What `ClaimPolicy.heldForWaiters` answers. @category access */
export interface ClaimQueue {
  /** The free members the claim must leave to earlier waiters. */
  reserved: ReadonlySet<string>;
  /** How many live waiters the pool has. */
  waiters: number;
}

/** What `ClaimPolicy.refusedByLimit` looks at. @category access */
export interface ClaimLimitInput {
  /** The claim Leases labelled with the identity's holder hash, of every pool and kind of the namespace. */
  leases: readonly LeaseObject[];
  identity: string;
  /** How many desktops the identity may hold; `undefined` sets no limit. */
  limit: number | undefined;
  now: Date;
}
