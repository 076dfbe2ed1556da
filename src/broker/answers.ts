import { httpStatusByCode, isVdiError, type VdiErrorCode } from '../errors.js';
import type { BrokerResponse } from './http-io.js';

const jsonHeaders = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

/** A JSON answer with the headers every broker answer carries. */
export function answerJson(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): BrokerResponse {
  return { status, headers: { ...jsonHeaders, ...headers }, body: JSON.stringify(body) };
}

/** An error answer `{ error: { code, message } }` with the status of its code. */
export function answerFailure(
  code: VdiErrorCode,
  message: string,
  headers: Record<string, string> = {},
): BrokerResponse {
  return answerJson(httpStatusByCode[code], { error: { code, message } }, headers);
}

/**
 * The answer to a thrown error: a `VdiError` answers with its code and message; anything else is logged
 * through `logUnexpected` and answers 500 without details, so no stack trace or credential leaves the broker.
 */
export function answerError(error: unknown, logUnexpected: (error: unknown) => void): BrokerResponse {
  if (isVdiError(error)) return answerFailure(error.code, error.message);
  logUnexpected(error);
  return answerUnexpected();
}

/** The 500 of an unexpected failure, which says no more than that. */
export function answerUnexpected(): BrokerResponse {
  return answerFailure('INTERNAL', 'The broker failed unexpectedly; its log has the details.');
}
