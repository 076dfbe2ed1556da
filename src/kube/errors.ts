import { ApiException } from '@kubernetes/client-node';
import { isVdiError, VdiError, type VdiErrorCode } from '../errors.js';

/** What the apiserver said, parsed from an `ApiException` (whose body is raw JSON text). */
export interface ApiFailure {
  status: number;
  reason: string;
  message: string;
  retryAfterSeconds: number | undefined;
}

const networkErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

function parseStatusBody(body: unknown): { reason?: string; message?: string } {
  if (typeof body === 'string') {
    try {
      return parseStatusBody(JSON.parse(body));
    } catch {
      return { message: body.slice(0, 300) };
    }
  }
  if (typeof body === 'object' && body !== null) {
    const status = body as { reason?: unknown; message?: unknown };
    return {
      ...(typeof status.reason === 'string' ? { reason: status.reason } : {}),
      ...(typeof status.message === 'string' ? { message: status.message } : {}),
    };
  }
  return {};
}

/** Reads the status, reason and message of a failed apiserver call, or undefined when it is not one. */
export function apiFailureOf(error: unknown): ApiFailure | undefined {
  if (error instanceof ApiException) {
    const parsed = parseStatusBody(error.body);
    const retryAfter = Number(error.headers?.['retry-after']);
    return {
      status: error.code,
      reason: parsed.reason ?? '',
      message: parsed.message ?? '',
      retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
    };
  }
  return undefined;
}

function isNetworkError(error: unknown): boolean {
  for (let current = error; typeof current === 'object' && current !== null; ) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && networkErrorCodes.has(code)) return true;
    if (
      (current as { name?: unknown }).name === 'FetchError' ||
      (current as Error).message === 'fetch failed'
    )
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function codeForStatus(status: number): VdiErrorCode {
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 400 || status === 422) return 'INVALID_INPUT';
  if (status === 429 || status >= 500) return 'CLUSTER_UNAVAILABLE';
  return 'INTERNAL';
}

/**
 * Turns anything an apiserver call threw into a `VdiError`. `doing` names the call for the message, such as
 * `create Lease corral-vms/corral-vdi-devpool-1`. Credentials never reach the message or the details.
 */
export function toVdiError(error: unknown, doing: string): VdiError {
  if (isVdiError(error)) return error;
  const failure = apiFailureOf(error);
  if (failure) {
    const code = codeForStatus(failure.status);
    const said = failure.message || failure.reason || `HTTP ${failure.status}`;
    const advice =
      code === 'FORBIDDEN'
        ? ' Grant the caller that permission in the namespace (see the permissions in the docs).'
        : code === 'CLUSTER_UNAVAILABLE'
          ? ' The apiserver is busy or unavailable; try again.'
          : '';
    return new VdiError(code, `Could not ${doing}: ${said}.${advice}`, {
      retryable: code === 'CLUSTER_UNAVAILABLE',
      details: {
        status: failure.status,
        reason: failure.reason,
        ...(failure.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: failure.retryAfterSeconds }),
      },
      cause: error,
    });
  }
  if (isNetworkError(error)) {
    return new VdiError(
      'CLUSTER_UNAVAILABLE',
      `Could not ${doing}: the apiserver did not answer. Check that the cluster is reachable and try again.`,
      {
        retryable: true,
        cause: error,
      },
    );
  }
  const text = error instanceof Error ? error.message : String(error);
  return new VdiError('INTERNAL', `Could not ${doing}: ${text}`, { cause: error });
}

/** Whether a translated error is the apiserver's 409 with the given reason (`AlreadyExists`, `Conflict`). */
export function isConflictReason(error: unknown, reason: 'AlreadyExists' | 'Conflict'): boolean {
  return isVdiError(error, 'CONFLICT') && error.details.reason === reason;
}
