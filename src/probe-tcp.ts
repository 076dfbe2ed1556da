import { connect } from 'node:net';
import type { TcpProbeResult } from './connect-facts.js';
import { VdiError } from './errors.js';

/** How long a connect waits for TCP 3389 to answer unless told otherwise, in milliseconds. @category connect */
export const defaultProbeTimeoutMs = 1500;

/** Options of {@link probeTcp}. @category connect */
export interface ProbeTcpOptions {
  /** How long to wait for the handshake, in milliseconds. Default {@link defaultProbeTimeoutMs}. */
  timeoutMs?: number;
  /** Cancels the probe; it then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Tries one TCP handshake with `host:port` from this machine and closes the connection at once. Nothing is
 * cached: every call opens a new socket.
 *
 * @example
 * ```ts
 * const probe = await probeTcp('10.244.1.17', 3389, { timeoutMs: 1000 });
 * if (probe.outcome === 'answered') console.log('RDP is listening');
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` when `timeoutMs` is not a positive number; the signal's reason when
 *   it is aborted.
 * @category connect
 */
export async function probeTcp(
  host: string,
  port: number,
  options: ProbeTcpOptions = {},
): Promise<TcpProbeResult> {
  const { timeoutMs = defaultProbeTimeoutMs, signal } = options;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new VdiError(
      'INVALID_INPUT',
      `The probe timeout must be a positive number of milliseconds, not ${timeoutMs}.`,
    );
  }
  signal?.throwIfAborted();
  return await new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const settle = (outcome: TcpProbeResult['outcome'], errorCode?: string) => {
      finish();
      resolve({ host, port, outcome, timeoutMs, ...(errorCode ? { errorCode } : {}) });
    };
    const onAbort = () => {
      finish();
      reject(signal?.reason);
    };
    const timer = setTimeout(() => settle('timed-out'), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.removeAllListeners();
      // a late error on a socket being torn down must not become an unhandled 'error' event
      socket.on('error', () => {});
      socket.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => settle('answered'));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNREFUSED' ? settle('refused') : settle('unreachable', error.code),
    );
  });
}
