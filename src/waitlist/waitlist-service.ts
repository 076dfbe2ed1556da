import type { ClaimResult } from '../claims/claim-desktop.js';
import type { VdiContext } from '../context.js';
import {
  cancelWait,
  claimOrWait,
  type WaiterOptions,
  type WaitingClaimOptions,
  type WaitPosition,
  waitPosition,
} from './claim-or-wait.js';

/** Claims that may wait for a member, first come first served. Create it with `createVdi`. @category waitlist */
export interface WaitlistService {
  /**
   * Claims a free member of a pool for `identity` and starts it, as {@link ClaimsService.claim} does. Members held
   * for earlier waiters are left to them. With `wait`, an identity that finds no member free for it joins the
   * pool's queue (a Lease the call renews while it waits) and claims the next member left to it; the call resolves
   * with that desktop. A claim by an identity that already holds a desktop of the pool returns that one.
   *
   * @example
   * ```ts
   * const desktop = await vdi.claim({
   *   pool: 'devpool',
   *   identity: 'alice',
   *   wait: true,
   *   waitTimeoutMs: 10 * 60_000,
   *   onPosition: ({ position, waiters }) => console.log(`waiting: ${position} of ${waiters}`),
   * });
   * ```
   * @throws {@link VdiError} `NO_FREE_MEMBER` without `wait` (`details.waiters` counts the queue ahead),
   *   `WAIT_TIMED_OUT` (retryable) past `waitTimeoutMs`, `CANCELLED` when `signal` aborts or the wait is cancelled,
   *   `INVALID_INPUT` (a `waitTimeoutMs` that is not a positive whole number) before anything is written, and
   *   what {@link ClaimsService.claim} throws.
   */
  claim(options: WaitingClaimOptions): Promise<ClaimResult>;
  /**
   * Takes an identity out of a pool's queue; its waiting claim fails with `CANCELLED`.
   *
   * @returns whether it was waiting.
   * @throws {@link VdiError} `INVALID_INPUT`.
   */
  cancelWait(options: WaiterOptions): Promise<boolean>;
  /**
   * An identity's place in a pool's queue, or `undefined` when it does not wait.
   *
   * @throws {@link VdiError} `INVALID_INPUT`.
   */
  waitPosition(options: WaiterOptions): Promise<WaitPosition | undefined>;
}

/** Builds the waitlist service on a context. */
export function createWaitlistService(ctx: VdiContext): WaitlistService {
  return {
    claim: (options) => claimOrWait(ctx, options, { actor: undefined, order: 'random' }),
    cancelWait: (options) => cancelWait(ctx, options),
    waitPosition: (options) => waitPosition(ctx, options),
  };
}
