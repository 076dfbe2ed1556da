/**
 * Where the SDK reads the time. Inject one in tests to drive timeouts and reclaim without sleeping.
 *
 * @category time
 */
export interface Clock {
  /** The current time. */
  now(): Date;
}
