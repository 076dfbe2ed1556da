/**
 * Every failure the SDK reports, by code. Front ends switch on the code; the message is for people.
 *
 * @category errors
 */
export type VdiErrorCode =
  | 'NO_FREE_MEMBER'
  | 'NOT_HOLDER'
  | 'CLAIM_CHANGED'
  | 'CLAIM_ENDED'
  | 'CLAIM_EXPIRED'
  | 'DESKTOP_STOPPED'
  | 'GOLDEN_NOT_FOUND'
  | 'POOL_NOT_FOUND'
  | 'MEMBER_NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'POOL_IN_USE'
  | 'CLONE_TIMEOUT'
  | 'CLONE_FAILED'
  | 'START_FAILED'
  | 'STOP_FAILED'
  | 'RECREATE_FAILED'
  | 'CANCELLED'
  | 'WAIT_TIMED_OUT'
  | 'INSUFFICIENT_CAPACITY'
  | 'UNSUPPORTED_BACKEND'
  | 'USB_UNAVAILABLE'
  | 'COMMAND_NOT_FOUND'
  | 'INVALID_INPUT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_ENTITLED'
  | 'USER_LIMIT_REACHED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'CLUSTER_UNAVAILABLE'
  | 'NOT_LEADER'
  | 'NOT_READY'
  | 'CONTROL_PLANE_FAILED'
  | 'INTERNAL';

/**
 * The HTTP status the broker answers for each code. Exhaustive: a new code does not compile until it is mapped.
 *
 * @category errors
 */
export const httpStatusByCode: Readonly<Record<VdiErrorCode, number>> = {
  NO_FREE_MEMBER: 409,
  NOT_HOLDER: 403,
  CLAIM_CHANGED: 409,
  CLAIM_ENDED: 404,
  CLAIM_EXPIRED: 409,
  DESKTOP_STOPPED: 409,
  GOLDEN_NOT_FOUND: 404,
  POOL_NOT_FOUND: 404,
  MEMBER_NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  POOL_IN_USE: 409,
  CLONE_TIMEOUT: 504,
  CLONE_FAILED: 502,
  START_FAILED: 502,
  STOP_FAILED: 502,
  RECREATE_FAILED: 502,
  // the status nginx and gRPC gateways use for a request its caller gave up on
  CANCELLED: 499,
  // as CLONE_TIMEOUT: the wait behind the request ran out, and the same request may succeed later
  WAIT_TIMED_OUT: 504,
  INSUFFICIENT_CAPACITY: 409,
  UNSUPPORTED_BACKEND: 422,
  USB_UNAVAILABLE: 422,
  COMMAND_NOT_FOUND: 500,
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_ENTITLED: 403,
  USER_LIMIT_REACHED: 409,
  NOT_FOUND: 404,
  CONFLICT: 409,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  CLUSTER_UNAVAILABLE: 503,
  NOT_LEADER: 503,
  NOT_READY: 503,
  CONTROL_PLANE_FAILED: 500,
  INTERNAL: 500,
};

/**
 * Options of a {@link VdiError}.
 *
 * @category errors
 */
export interface VdiErrorOptions {
  /** Whether the same call may succeed if repeated unchanged (a transient apiserver error, a busy member). */
  retryable?: boolean;
  /** Structured facts for programs: the member, the pool, per-node capacity, validation issues. */
  details?: Readonly<Record<string, unknown>>;
  /** The error that caused this one, such as the apiserver's answer. */
  cause?: unknown;
}

/**
 * The one error class of the SDK. Its message says what went wrong and what to do next.
 *
 * @example
 * ```ts
 * try {
 *   await vdi.claim({ pool: 'devpool', identity: 'alice' });
 * } catch (error) {
 *   if (isVdiError(error) && error.code === 'NO_FREE_MEMBER') console.log(error.message);
 *   else throw error;
 * }
 * ```
 * @category errors
 */
export class VdiError extends Error {
  override readonly name = 'VdiError' as const;
  readonly code: VdiErrorCode;
  readonly retryable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: VdiErrorCode, message: string, options: VdiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details ?? {};
  }

  /** The HTTP status a server should answer for this error. */
  get httpStatus(): number {
    return httpStatusByCode[this.code];
  }
}

/**
 * Whether `value` is a {@link VdiError}, optionally with one of the given codes. Matches on `name`, so it works
 * across realms and across the ESM and CJS builds, where `instanceof` does not.
 *
 * @example
 * ```ts
 * if (isVdiError(error, 'CLAIM_EXPIRED', 'CLAIM_ENDED')) await vdi.claim({ pool, identity });
 * ```
 * @category errors
 */
export function isVdiError(value: unknown, ...codes: VdiErrorCode[]): value is VdiError {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { name?: unknown; code?: unknown };
  if (candidate.name !== 'VdiError' || typeof candidate.code !== 'string') return false;
  return codes.length === 0 || codes.includes(candidate.code as VdiErrorCode);
}
