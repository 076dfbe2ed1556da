/**
 * The events a {@link Vdi} emits, by name. Payloads are facts about what just happened; events may be missed by
 * a listener added late, so never use them as the source of truth — the cluster is.
 *
 * @category events
 */
export interface VdiEvents {
  /** A claim succeeded (`adopted` when it took over a v0.6.0 assignment). */
  claimed: [
    event: { desktopId: string; identity: string; sessionId: string; adopted: boolean; retried: boolean },
  ];
  /** A claimant lost the Lease race for a member and moved on. */
  'claim-conflict': [event: { desktopId: string; identity: string }];
  /**
   * A claim could not delete its claimant Lease `lease` as it ended (most often the identity may not delete Leases;
   * `error` says why). The claim's own answer stands; the identity's next claim of the same pool (or, for its
   * namespace-wide Lease, its next claim under a per-user limit) waits 5 s for the Lease and then takes it over.
   */
  'claimant-lease-left': [event: { namespace: string; lease: string; identity: string; error: string }];
  /** A desktop was started (or found running). */
  started: [event: { desktopId: string; identity: string }];
  /** A start failed; the claim stays. */
  'start-failed': [event: { desktopId: string; identity: string; error: string }];
  /** A desktop was released (`force` when an admin released another user's desktop). */
  released: [event: { desktopId: string; identity: string; holder: string; force: boolean }];
  /** A pool member finished one step of a create or resize. */
  'pool-progress': [
    event: {
      poolId: string;
      member: string;
      step: 'cloning' | 'ready' | 'failed' | 'removed';
      done: number;
      total: number;
    },
  ];
  /**
   * The one snapshot of the golden VM that a create or grow of several members restores them all from: `taking`,
   * `ready`, `deleted` once every clone finished, `left` when it could not be deleted (`reason`), or `skipped` when
   * the identity may not make one or the cluster has no snapshot API (`reason`): each member's clone then snapshots
   * the golden VM itself, one after another, which is slower.
   */
  'pool-snapshot': [
    event: {
      poolId: string;
      step: 'taking' | 'ready' | 'deleted' | 'left' | 'skipped';
      snapshot?: string;
      reason?: string;
    },
  ];
  /**
   * A scheduled pool's keeper changed the pool: the period in force (`null` outside every period), the targets, and
   * the members it cloned, removed, started and stopped.
   */
  'pool-scaled': [
    event: {
      poolId: string;
      period: string | null;
      size: number;
      freeRunning: number;
      added: string[];
      removed: string[];
      started: string[];
      stopped: string[];
    },
  ];
  /**
   * A roll-out moved a member: `rebuilding` as it begins, then `rebuilt` from the new golden VM `to` or `failed`
   * (`error` says why; the next pass finishes it); `onTarget` of `total` members are on `to`.
   */
  'pool-rollout': [
    event: {
      poolId: string;
      to: string;
      member: string;
      step: 'rebuilding' | 'rebuilt' | 'failed';
      onTarget: number;
      total: number;
      error?: string;
    },
  ];
  /** Every member of a pool is on the golden VM `to`: its roll-out is finished. */
  'pool-rolled-out': [event: { poolId: string; to: string; total: number }];
  /** A scheduled pool's keeper failed; it tries again at `retryAt` (RFC 3339), backing off. */
  'pool-schedule-failed': [event: { poolId: string; error: string; attempts: number; retryAt: string }];
  /** The reclaim policy took a desktop back. */
  reclaimed: [
    event: {
      desktopId: string;
      holder: string;
      reason: 'disconnect-grace' | 'max-duration' | 'idle' | 'not-entitled' | 'roll-out';
    },
  ];
  /** A reclaim failed; the claim stays and the next pass tries again. */
  'reclaim-failed': [
    event: {
      desktopId: string;
      holder: string;
      reason: 'disconnect-grace' | 'max-duration' | 'idle' | 'not-entitled' | 'roll-out';
      error: string;
    },
  ];
  /**
   * A reclaim fell due on a pool whose action is `notify`: the claim stays. `dueAt` is the reclaim's instant (RFC
   * 3339); `webhook` says how the POST to the pool's webhook went, when it has one.
   */
  'reclaim-notified': [
    event: {
      desktopId: string;
      pool: string;
      holder: string;
      reason: 'disconnect-grace' | 'max-duration' | 'idle' | 'not-entitled' | 'roll-out';
      dueAt: string;
      webhook?: { ok: boolean; status?: number; error?: string };
    },
  ];
  /**
   * The pool of a claimed desktop no longer lets its holder in: the session engine marked the claim, and reclaims it
   * at `reclaimAt` (RFC 3339) unless the pool lets the holder in again first.
   */
  'not-entitled': [event: { desktopId: string; holder: string; reclaimAt: string }];
  /**
   * The holder of a desktop was warned that it is reclaimed at `reclaimAt` (RFC 3339) for `reason`, once per reason
   * and instant across broker replicas; `webhook` says how the POST to the pool's webhook went, when it has one.
   */
  'reclaim-warning': [
    event: {
      desktopId: string;
      pool: string;
      holder: string;
      reason: 'disconnect-grace' | 'max-duration' | 'idle' | 'not-entitled' | 'roll-out';
      reclaimAt: string;
      webhook?: { ok: boolean; status?: number; error?: string };
    },
  ];
  /**
   * A desktop connected through broker consoles goes idle at `idleAt` (RFC 3339) unless input reaches it; emitted
   * with the `reclaim-warning` of an idle reclaim.
   */
  'idle-warning': [event: { desktopId: string; holder: string; idleAt: string }];
  /** The engine renewed a claim's Lease. */
  renewed: [event: { desktopId: string; holder: string }];
  /** A watch cache's list or watch failed (`cached` names what it holds); it tries again after a backoff. */
  'cache-failed': [event: { cached: string; error: string }];
}
