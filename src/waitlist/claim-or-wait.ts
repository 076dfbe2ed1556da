import { z } from 'zod';
import { type ClaimHow, type ClaimOptions, type ClaimResult, claimDesktop } from '../claims/claim-desktop.js';
import { deleteLeaseAsRead } from '../claims/lease-writes.js';
import { readPool } from '../claims/pool-reads.js';
import { backendFor, type VdiContext } from '../context.js';
import { defaultDesktopKind } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import type { LeaseObject } from '../kube-objects.js';
import { parseRfc3339 } from '../parse-time.js';
import {
  identitySchema,
  namespaceSchema,
  parseOptions,
  poolNameSchema,
  validateNamespace,
} from '../validate.js';
import { planWaitlist, type WaitlistPlan } from './plan-waitlist.js';
import { enqueueWaiter, readWaiterLease, renewWaiterLease, type WaiterTarget } from './waiter-leases.js';
import { enqueuedAtAnnotation, waiterLeaseName, waiterRenewMs } from './waitlist-keys.js';

/** How long a waiting claim rests between looks at its pool, unless a release in this process wakes it sooner. */
export const waitRecheckMs = 1000;
/** The longest wait a claim may ask for: a week. @category waitlist */
export const maxWaitTimeoutMs = 7 * 24 * 3600 * 1000;

/** A waiter's place in its pool's queue. @category waitlist */
export interface WaitPosition {
  /** 1 for the next to get a member. */
  position: number;
  /** How many live waiters the pool has, this one included. */
  waiters: number;
  /** When this identity joined the queue (RFC 3339). */
  enqueuedAt: string;
}

/** Options of a claim through {@link WaitlistService.claim}. @category waitlist */
export interface WaitingClaimOptions extends ClaimOptions {
  /** When no member is free, join the pool's queue and wait for one instead of failing with `NO_FREE_MEMBER`. */
  wait?: boolean;
  /** Cancels the wait: the identity leaves the queue and the claim fails with `CANCELLED`. */
  signal?: AbortSignal;
  /** Give up after this long (on the SDK's clock) with `WAIT_TIMED_OUT`; without it, wait until cancelled. */
  waitTimeoutMs?: number;
  /** Told the waiter's place when it joins the queue and whenever it moves. */
  onPosition?: (position: WaitPosition) => void;
}

const waitSchema = z
  .object({
    pool: poolNameSchema,
    identity: identitySchema,
    namespace: namespaceSchema.optional(),
    kind: z.enum(['vm', 'ct']).optional(),
    groups: z.array(identitySchema).optional(),
    asAdmin: z.boolean().optional(),
    maxDesktopsPerUser: z.number().int().min(0).optional(),
    wait: z.boolean().optional(),
    signal: z.instanceof(AbortSignal).optional(),
    waitTimeoutMs: z
      .number()
      .int('waitTimeoutMs must be a whole number of milliseconds')
      .positive('waitTimeoutMs must be more than 0')
      .max(maxWaitTimeoutMs, 'waitTimeoutMs must be at most a week')
      .optional(),
    onPosition: z.custom<(position: WaitPosition) => void>((value) => typeof value === 'function').optional(),
  })
  .refine((options) => options.wait === true || options.waitTimeoutMs === undefined, {
    message: 'waitTimeoutMs needs wait: true',
    path: ['waitTimeoutMs'],
  });

/** One identity's wait on one pool, as `cancelWait` and `waitPosition` of the waitlist service name it. @category waitlist */
export interface WaiterOptions {
  pool: string;
  identity: string;
  namespace?: string;
  kind?: 'vm' | 'ct';
}

const waiterSchema = z.object({
  pool: poolNameSchema,
  identity: identitySchema,
  namespace: namespaceSchema.optional(),
  kind: z.enum(['vm', 'ct']).optional(),
});

// the waits of this process, by waiter Lease, so a cancel here ends its wait at once
const localWaits = new WeakMap<object, Map<string, Set<AbortController>>>();

function localWaitsOf(ctx: VdiContext): Map<string, Set<AbortController>> {
  let waits = localWaits.get(ctx.cluster);
  if (waits === undefined) {
    waits = new Map();
    localWaits.set(ctx.cluster, waits);
  }
  return waits;
}

function waiterKey(target: WaiterTarget): string {
  return `${target.namespace}/${waiterLeaseName(target.kind, target.pool, target.identity)}`;
}

function toTarget(ctx: VdiContext, options: WaiterOptions): WaiterTarget {
  const { pool, identity, namespace, kind } = options;
  return {
    kind: kind ?? defaultDesktopKind,
    namespace: validateNamespace(namespace ?? ctx.defaultNamespace),
    pool,
    identity,
  };
}

/**
 * Claims a member as {@link claimDesktop} does; with `wait`, an identity that finds no member free for it joins
 * the pool's queue (its waiter Lease) and claims as soon as a member is left to it, first come first served.
 *
 * @throws {@link VdiError} what {@link claimDesktop} throws, `WAIT_TIMED_OUT` (retryable) past `waitTimeoutMs`,
 *   `CANCELLED` when the signal aborts or the wait is cancelled, `INVALID_INPUT` before anything is written.
 */
export async function claimOrWait(
  ctx: VdiContext,
  options: WaitingClaimOptions,
  how: ClaimHow,
): Promise<ClaimResult> {
  const parsed = parseOptions(waitSchema, options, 'claim');
  const { wait, signal, waitTimeoutMs, onPosition, ...claim } = parsed;
  if (!wait) return await claimDesktop(ctx, claim, how);
  const target = toTarget(ctx, claim);
  const backend = backendFor(ctx, target.kind);
  const deadline = waitTimeoutMs === undefined ? undefined : ctx.clock.now().getTime() + waitTimeoutMs;
  const local = new AbortController();
  const stop = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
  const waits = localWaitsOf(ctx);
  const key = waiterKey(target);
  const mine = waits.get(key) ?? new Set();
  waits.set(key, mine.add(local));
  let lease: LeaseObject | undefined;
  let reported: string | undefined;
  try {
    for (let first = true; ; first = false) {
      if (stop.aborted) throw cancelled(target);
      let plan: WaitlistPlan | undefined;
      if (!first) plan = await planFor(ctx, backend, target, lease);
      if (plan === undefined || plan.mayTake || plan.holding) {
        try {
          return await claimDesktop(ctx, claim, how);
        } catch (error) {
          // another claimant wrote the member's claim Lease first: stay in the queue
          if (!isVdiError(error, 'NO_FREE_MEMBER')) throw error;
        }
      }
      lease =
        lease === undefined ? await enqueueWaiter(ctx, target) : await keepWaiterLease(ctx, target, lease);
      plan = await planFor(ctx, backend, target, lease);
      const position = positionOf(plan, lease);
      const seen = `${position.position}/${position.waiters}`;
      if (seen !== reported) {
        reported = seen;
        onPosition?.(position);
      }
      if (deadline !== undefined && ctx.clock.now().getTime() >= deadline) {
        throw timedOut(target, waitTimeoutMs ?? 0, position);
      }
      await pauseForChange(ctx, stop);
    }
  } finally {
    mine.delete(local);
    if (mine.size === 0 && waits.get(key) === mine) waits.delete(key);
    // best effort: a Lease left behind expires by itself and is dropped
    if (lease) await deleteLeaseAsRead(ctx, lease).catch(() => false);
  }
}

async function planFor(
  ctx: VdiContext,
  backend: ReturnType<typeof backendFor>,
  target: WaiterTarget,
  own: LeaseObject | undefined,
): Promise<WaitlistPlan> {
  const read = await readPool(ctx, backend, target, { cached: true });
  // a cached read may not show the waiter's own Lease yet; the one it wrote is the newest it knows
  const leases = own
    ? [...read.leases.filter((lease) => lease.metadata.name !== own.metadata.name), own]
    : read.leases;
  const plan = planWaitlist({ ...target, members: read.members, leases, now: ctx.clock.now() });
  // a waiter whose Lease ran out is gone: remove what it left behind (the plan already passes it over)
  await Promise.all(plan.expired.map((expired) => deleteLeaseAsRead(ctx, expired)));
  return plan;
}

/**
 * Renews the waiter Lease when due. A Lease someone deleted means the wait was cancelled elsewhere (another
 * broker replica, `cancelWait`), or dropped after it expired; either way this wait ends.
 */
async function keepWaiterLease(
  ctx: VdiContext,
  target: WaiterTarget,
  lease: LeaseObject,
): Promise<LeaseObject> {
  const renewedAt = parseRfc3339(lease.spec.renewTime ?? '');
  if (renewedAt && ctx.clock.now().getTime() - renewedAt.getTime() < waiterRenewMs) return lease;
  const renewed = await renewWaiterLease(ctx, lease);
  if (renewed) return renewed;
  const current = await readWaiterLease(ctx, target);
  if (current === undefined || current.spec.holderIdentity !== target.identity) throw cancelled(target);
  // another call of the same identity renewed it: carry on with what it wrote
  return current;
}

function positionOf(plan: WaitlistPlan, lease: LeaseObject): WaitPosition {
  const enqueuedAt = lease.metadata.annotations?.[enqueuedAtAnnotation] ?? '';
  return {
    position: plan.position ?? plan.queue.length + 1,
    waiters: plan.position === undefined ? plan.queue.length + 1 : plan.queue.length,
    enqueuedAt,
  };
}

// a release or reclaim in this process may have freed a member: look again at once
function pauseForChange(ctx: VdiContext, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      ctx.events.off('released', done);
      ctx.events.off('reclaimed', done);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, waitRecheckMs);
    ctx.events.on('released', done);
    ctx.events.on('reclaimed', done);
    stop.addEventListener('abort', done, { once: true });
  });
}

function cancelled({ namespace, pool }: WaiterTarget): VdiError {
  return new VdiError(
    'CANCELLED',
    `The wait for a member of pool "${pool}" in namespace "${namespace}" was cancelled; you left its queue.`,
    { details: { namespace, pool } },
  );
}

function timedOut({ namespace, pool }: WaiterTarget, waitTimeoutMs: number, at: WaitPosition): VdiError {
  return new VdiError(
    'WAIT_TIMED_OUT',
    `No member of pool "${pool}" in namespace "${namespace}" came free for you within ${waitTimeoutMs / 1000} s (you were ${at.position} of ${at.waiters} in the queue); you left the queue. Claim again with a longer wait, or grow the pool.`,
    { retryable: true, details: { namespace, pool, waitTimeoutMs, ...at } },
  );
}

/**
 * Takes an identity out of a pool's queue: deletes its waiter Lease, and ends its wait at once when it runs in
 * this process (elsewhere it ends at its next renewal). A claim that already won its member keeps it.
 *
 * @returns whether the identity was waiting.
 * @throws {@link VdiError} `INVALID_INPUT`.
 */
export async function cancelWait(ctx: VdiContext, options: WaiterOptions): Promise<boolean> {
  const target = toTarget(ctx, parseOptions(waiterSchema, options, 'cancelWait'));
  const key = waiterKey(target);
  const local = [...(localWaitsOf(ctx).get(key) ?? [])];
  for (const wait of local) wait.abort();
  const lease = await readWaiterLease(ctx, target);
  const removed = lease !== undefined && (await deleteLeaseAsRead(ctx, lease));
  return removed || local.length > 0;
}

/**
 * An identity's place in a pool's queue, read fresh, or `undefined` when it does not wait.
 *
 * @throws {@link VdiError} `INVALID_INPUT`.
 */
export async function waitPosition(
  ctx: VdiContext,
  options: WaiterOptions,
): Promise<WaitPosition | undefined> {
  const target = toTarget(ctx, parseOptions(waiterSchema, options, 'waitPosition'));
  const read = await readPool(ctx, backendFor(ctx, target.kind), target, { cached: false });
  const plan = planWaitlist({ ...target, members: read.members, leases: read.leases, now: ctx.clock.now() });
  const waiter = plan.queue[(plan.position ?? 0) - 1];
  if (waiter === undefined || plan.position === undefined) return undefined;
  return {
    position: plan.position,
    waiters: plan.queue.length,
    enqueuedAt: waiter.enqueuedAt.toISOString(),
  };
}
