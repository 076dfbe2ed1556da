import type { MemberFacts } from '../desktop-backend.js';
import type { LeaseObject } from '../kube-objects.js';
import type { PoolRollout } from '../pool-rollout.js';
import { planRollout } from './plan-rollout.js';

/** A pool's roll-out as `pool status` shows it. @category rollouts */
export interface RolloutStatus {
  /** The golden VM the pool moves to. */
  to: string;
  /** Members made from `to`, of `total`: `3/10 on golden-v2`. */
  onTarget: number;
  total: number;
  maxUnavailable: number;
  startedAt: string;
  /** When claimed members still on an older golden VM are reclaimed (RFC 3339), or `null` to wait for releases. */
  deadline: string | null;
  paused: boolean;
  /** When every member was on `to`, or `null` while under way. */
  finishedAt: string | null;
  /** Members being rebuilt now. */
  rebuilding: string[];
  /** Claimed members on an older golden VM: rebuilt once released, or reclaimed at the deadline. */
  claimed: string[];
  /** Free running members the buffer keeps from a rebuild now. */
  heldBack: number;
}

/**
 * Describes where a pool's roll-out stands from one read of the pool. Pure.
 *
 * @category rollouts
 */
export function describeRollout(input: {
  rollout: PoolRollout;
  members: readonly MemberFacts[];
  leases: readonly LeaseObject[];
  buffer: number;
  now: Date;
  /** Count a member warm only once Ready, as a container pool's roll-out does. */
  readyOnly?: boolean | undefined;
}): RolloutStatus {
  const { rollout } = input;
  const plan = planRollout({ ...input, rollTo: new Map() });
  const finished = rollout.finishedAt !== undefined;
  return {
    to: rollout.to,
    onTarget: plan.onTarget.length,
    total: plan.total,
    maxUnavailable: rollout.maxUnavailable,
    startedAt: rollout.startedAt,
    deadline: rollout.deadline ?? null,
    paused: rollout.paused ?? false,
    finishedAt: rollout.finishedAt ?? null,
    rebuilding: rollout.rebuilding,
    claimed: finished ? [] : plan.claimed,
    heldBack: finished ? 0 : plan.heldBack,
  };
}
