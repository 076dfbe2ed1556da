import { isVdiError } from '../errors.js';

/**
 * The words of what went wrong in a backend step: a backend wraps a refused start or stop as `START_FAILED` or
 * `STOP_FAILED` around the cluster's own error, whose message is what a user reads in a claim's messages.
 */
export function failureReason(error: unknown): string {
  const inner = isVdiError(error, 'START_FAILED', 'STOP_FAILED') ? error.cause : error;
  return inner instanceof Error ? inner.message : String(inner);
}
