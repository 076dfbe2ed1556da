import { ApiException } from '@kubernetes/client-node';
import { isVdiError, VdiError, type VdiErrorCode } from '../errors.js';

/** What the apiserver said, parsed from an `ApiException` (whose body is raw JSON text). */
export interface ApiFailure {
  status: number;
  reason: string;
  message: string;
  retryAfterSeconds: number | undefined;
  /** Whether the body was a Kubernetes `Status`; a bare text 404 comes from a mux that does not serve the API. */
  isStatus: boolean;
}

const networkErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

function parseStatusBody(body: unknown): { reason?: string; message?: string; isStatus?: true } {
  if (typeof body === 'string') {
    try {
      return parseStatusBody(JSON.parse(body));
    } catch {
      return { message: body.slice(0, 300) };
    }
  }
  if (typeof body === 'object' && body !== null) {
    const status = body as { kind?: unknown; reason?: unknown; message?: unknown };
    return {
      ...(typeof status.reason === 'string' ? { reason: status.reason } : {}),
      ...(typeof status.message === 'string' ? { message: status.message } : {}),
      ...(status.kind === 'Status' ? { isStatus: true } : {}),
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
      isStatus: parsed.isStatus === true,
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

// While an apiserver restarts, or an aggregated API is down, its mux answers a bare 404 instead of a Status.
function isUnservedApi(failure: ApiFailure): boolean {
  return failure.status === 404 && !failure.isStatus;
}

function codeForStatus(failure: ApiFailure): VdiErrorCode {
  const { status } = failure;
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'FORBIDDEN';
  if (isUnservedApi(failure)) return 'CLUSTER_UNAVAILABLE';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 400 || status === 422) return 'INVALID_INPUT';
  if (status === 429 || status >= 500) return 'CLUSTER_UNAVAILABLE';
  return 'INTERNAL';
}

function adviceFor(failure: ApiFailure, code: VdiErrorCode): string {
  if (code === 'FORBIDDEN')
    return ' Grant the caller that permission in the namespace (see the permissions in the docs).';
  if (isUnservedApi(failure))
    return (
      " The apiserver does not serve this API right now, as happens while it restarts or while KubeVirt's API" +
      ' is not ready. Wait a few seconds and try again; if it lasts, check that KubeVirt is installed and running.'
    );
  if (failure.status === 429) return ' The apiserver is busy; wait a moment and try again.';
  if (failure.status === 503)
    return ' The apiserver or an API behind it is unavailable, maybe restarting; wait a few seconds and try again.';
  if (code === 'CLUSTER_UNAVAILABLE') return ' The apiserver failed to answer; try again.';
  return '';
}

/**
 * Turns anything an apiserver call threw into a `VdiError`. `doing` names the call for the message, such as
 * `create Lease corral-vms/corral-vdi-devpool-1`. Credentials never reach the message or the details.
 */
export function toVdiError(error: unknown, doing: string): VdiError {
  if (isVdiError(error)) return error;
  const failure = apiFailureOf(error);
  if (failure) {
    const code = codeForStatus(failure);
    const said = failure.message.trim() || failure.reason || `HTTP ${failure.status}`;
    // KubeVirt's admission messages end in a full stop of their own
    const stop = /[.!?]$/.test(said) ? '' : '.';
    return new VdiError(code, `Could not ${doing}: ${said}${stop}${adviceFor(failure, code)}`, {
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
